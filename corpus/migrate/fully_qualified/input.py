import torch
import torch_xla
import torch_xla.core.xla_model
import torch_xla.distributed.xla_multiprocessing


def _run(index):
    device = torch_xla.core.xla_model.xla_device()
    x = torch.randn(3, 3).to(device)
    y = x @ x.T
    torch_xla.core.xla_model.mark_step()
    torch_xla.core.xla_model.master_print(y.cpu())


if __name__ == "__main__":
    torch_xla.distributed.xla_multiprocessing.spawn(_run, args=(), nprocs=8)
