import argparse

import torch
from torch_xla.core import xla_model as xm
from torch_xla import runtime as xr
from torch_xla.distributed import xla_multiprocessing as xmp


def fn(rank):
    dev = xm.xla_device()
    t = torch.full((2,), float(xr.global_ordinal()), device=dev)
    xm.mark_step()
    print(rank, t.cpu())
    print(f"rank {xr.global_ordinal()} of {xr.world_size()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nprocs", type=int, default=4)
    args = parser.parse_args()
    xmp.spawn(fn, nprocs=args.nprocs)
