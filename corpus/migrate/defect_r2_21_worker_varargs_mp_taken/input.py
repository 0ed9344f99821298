"""Issue 19, defect 21: a worker that takes `*args`, in a file where `mp` is the standard
library's multiprocessing. The launcher is converted all the same: the index is `args[0]`, and
torch.multiprocessing comes in under another name.
"""
import multiprocessing as mp

import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


def main(*args):
    device = xm.xla_device()
    x = torch.ones(2).to(device) * (xr.global_ordinal() + 1)
    total = xm.all_reduce(xm.REDUCE_SUM, x)
    print(f"rank {xr.global_ordinal()} of {xr.world_size()} total={total.sum().item():.1f}")
    print(f"host has cpus: {mp.cpu_count() > 0}")


if __name__ == "__main__":
    xmp.spawn(main, args=())
