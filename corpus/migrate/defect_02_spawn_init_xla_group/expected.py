"""Spawned workers that set up torch.distributed themselves over the "xla" backend.

The xla:// init method takes rank and world size from the XLA runtime, so the worker
needs no MASTER_ADDR / RANK of its own.
"""
import os
import argparse

import torch, torch.distributed as dist
import torch.multiprocessing as mp


def train_fn(index, args):
    os.environ["LOCAL_RANK"] = str(index)
    os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * int(os.environ["LOCAL_WORLD_SIZE"]) + index)
    if not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    rank = dist.get_rank()
    world = dist.get_world_size()
    device = torch.device("tpu:0")

    # each rank contributes rank + 1: the sum is world * (world + 1) / 2 only if every rank took part
    t = torch.full((4,), float(rank + 1)).to(device)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    total = t.cpu()
    print(f"rank {rank} of {world} reduced={total.sum().item() / 4:.6f} expected={world * (world + 1) / 2:.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_cores", type=int, default=1)
    args = parser.parse_args()
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=args.num_cores)
    # one process per chip the launcher set up on this host (every attached chip by default)
    nprocs = len(os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) // int(os.environ.get("NNODES", "1"))
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
    mp.spawn(train_fn, args=(args,), nprocs=nprocs)
