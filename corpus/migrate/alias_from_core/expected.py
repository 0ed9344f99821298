import os
import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def fn(rank):
    os.environ["LOCAL_RANK"] = str(rank)
    os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * int(os.environ["LOCAL_WORLD_SIZE"]) + rank)
    dist.init_process_group("tpu_dist")
    dev = torch.device("tpu:0")
    t = torch.full((2,), float(dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))), device=dev)
    print(rank, t.cpu())
    print(f"rank {dist.get_rank() if dist.is_initialized() else int(os.environ.get('RANK', '0'))} of {dist.get_world_size() if dist.is_initialized() else int(os.environ.get('WORLD_SIZE', '1'))}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nprocs", type=int, default=4)
    args = parser.parse_args()
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=args.nprocs)
    # one process per chip the launcher set up on this host (every attached chip by default)
    nprocs = len(os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) // int(os.environ.get("NNODES", "1"))
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
    mp.spawn(fn, args=(), nprocs=nprocs)
