"""Only the master process logs the summary and writes the marker the job scheduler waits for."""
import argparse

import torch, torch.distributed as dist
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index, args):
    device = xm.xla_device()
    torch.manual_seed(0)
    model = nn.Linear(3, 1).to(device)
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3).to(device)
    out = model(x)
    xm.mark_step()
    print(f"rank {xr.global_ordinal()} of {xr.world_size()} out_sum={out.sum().item():.6f}", flush=True)

    if xm.is_master_ordinal():  # local=True by default: one per host
        with open("marker.txt", "x") as f:  # "x": a second writer (or a stale marker) is an error
            f.write(f"done world={xr.world_size()}\n")
        print(f"master wrote marker.txt (world {xr.world_size()})", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nprocs", type=int, default=1)
    args = parser.parse_args()
    xmp.spawn(_mp_fn, args=(args,), nprocs=args.nprocs)
