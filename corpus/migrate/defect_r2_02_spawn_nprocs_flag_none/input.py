"""A launcher whose process count is a flag that defaults to None ("every device").

torch_xla read nprocs=None as one process per device; the converted launcher must
not do arithmetic on None.
"""
import argparse

import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


def _mp_fn(index, flags):
    device = xm.xla_device()
    torch.manual_seed(flags.seed)
    w = torch.randn(8, 8)
    x = torch.randn(4, 8)
    y = torch.tanh(x @ w).to(device)
    total = xm.all_reduce(xm.REDUCE_SUM, y)  # every replica's contribution
    xm.mark_step()
    print(f"rank {xr.global_ordinal()} of {xr.world_size()} total={total.sum().item():.6f}")


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_cores", type=int, default=None, help="TPU cores to use (default: all)")
    parser.add_argument("--seed", type=int, default=3)
    return parser.parse_args()


if __name__ == "__main__":
    flags = parse_args()
    xmp.spawn(_mp_fn, args=(flags,), nprocs=flags.num_cores)
