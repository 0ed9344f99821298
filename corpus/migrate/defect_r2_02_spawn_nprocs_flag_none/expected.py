"""A launcher whose process count is a flag that defaults to None ("every device").

torch_xla read nprocs=None as one process per device; the converted launcher must
not do arithmetic on None.
"""
import os
import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _mp_fn(index, flags):
    os.environ["LOCAL_RANK"] = str(index)
    os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * int(os.environ["LOCAL_WORLD_SIZE"]) + index)
    dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    torch.manual_seed(flags.seed)
    w = torch.randn(8, 8)
    x = torch.randn(4, 8)
    y = torch.tanh(x @ w).to(device)
    reduced = y.clone()  # xm.all_reduce returned a new tensor
    dist.all_reduce(reduced, op=dist.ReduceOp.SUM)
    total = reduced  # every replica's contribution
    print(f"rank {dist.get_rank() if dist.is_initialized() else int(os.environ.get('RANK', '0'))} of {dist.get_world_size() if dist.is_initialized() else int(os.environ.get('WORLD_SIZE', '1'))} total={total.sum().item():.6f}")


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_cores", type=int, default=None, help="TPU cores to use (default: all)")
    parser.add_argument("--seed", type=int, default=3)
    return parser.parse_args()


if __name__ == "__main__":
    flags = parse_args()
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=flags.num_cores)
    # one process per chip the launcher set up on this host (every attached chip by default)
    nprocs = len(os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) // int(os.environ.get("NNODES", "1"))
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
    mp.spawn(_mp_fn, args=(flags,), nprocs=nprocs)
