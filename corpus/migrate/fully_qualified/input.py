import sys

import torch
import torch_xla
import torch_xla.core.xla_model
import torch_xla.runtime
import torch_xla.distributed.xla_multiprocessing


def _run(index):
    device = torch_xla.core.xla_model.xla_device()
    torch.manual_seed(0)
    x = torch.randn(3, 3).to(device)
    y = x @ x.T
    torch_xla.core.xla_model.mark_step()
    torch_xla.core.xla_model.master_print(y.cpu())
    print(f"rank {torch_xla.runtime.global_ordinal()} of {torch_xla.runtime.world_size()} checksum={y.sum().item():.6f}")


if __name__ == "__main__":
    nprocs = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    torch_xla.distributed.xla_multiprocessing.spawn(_run, args=(), nprocs=nprocs)
