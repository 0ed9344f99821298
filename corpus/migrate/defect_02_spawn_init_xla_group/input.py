"""Spawned workers that set up torch.distributed themselves over the "xla" backend.

The xla:// init method takes rank and world size from the XLA runtime, so the worker
needs no MASTER_ADDR / RANK of its own.
"""
import argparse

import torch, torch.distributed as dist
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
import torch_xla.distributed.xla_multiprocessing as xmp


def train_fn(index, args):
    dist.init_process_group("xla", init_method="xla://")
    rank = dist.get_rank()
    world = dist.get_world_size()
    device = xm.xla_device()

    # each rank contributes rank + 1: the sum is world * (world + 1) / 2 only if every rank took part
    t = torch.full((4,), float(rank + 1)).to(device)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    xm.mark_step()
    total = t.cpu()
    print(f"rank {rank} of {world} reduced={total.sum().item() / 4:.6f} expected={world * (world + 1) / 2:.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_cores", type=int, default=1)
    args = parser.parse_args()
    xmp.spawn(train_fn, args=(args,), nprocs=args.num_cores)
