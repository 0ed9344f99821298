"""Each spawned worker reports who it is: the rank and world size come from torch_xla's runtime.

Two launches: a module-level worker (the classic recipe) and a worker defined inside the
launching function (notebook/CLI helpers do this; a local function can't be pickled, so
that launch forks).
"""
import os
import argparse

import torch, torch.distributed as dist
import torch.multiprocessing as mp


def _mp_fn(i, n):
    # every worker must see its own ordinal, and all of them the same world size
    os.environ["LOCAL_RANK"] = str(i)
    os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * int(os.environ["LOCAL_WORLD_SIZE"]) + i)
    dist.init_process_group("tpu_dist")
    print(f"worker rank {dist.get_rank() if dist.is_initialized() else int(os.environ.get('RANK', '0'))} of {dist.get_world_size() if dist.is_initialized() else int(os.environ.get('WORLD_SIZE', '1'))} (index {i}, asked for {n})", flush=True)


def launch_nested(n):
    tag = "nested"

    def _worker(index):
        os.environ["LOCAL_RANK"] = str(index)
        os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * int(os.environ["LOCAL_WORLD_SIZE"]) + index)
        dist.init_process_group("tpu_dist")
        rank, world = dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0")), dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1"))
        with open(f"{tag}_rank{rank}_of{world}.txt", "w") as f:
            f.write(f"{tag} worker {index}: rank {rank} of {world}\n")
        print(f"{tag} rank {rank} of {world}", flush=True)

    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=n)
    # one process per chip the launcher set up on this host (every attached chip by default)
    nprocs = len(os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) // int(os.environ.get("NNODES", "1"))
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
    mp.start_processes(_worker, args=(), nprocs=nprocs, start_method="fork")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nprocs", type=int, default=1, help="processes (TPU cores) to use")
    args = parser.parse_args()
    n = args.nprocs

    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=n)
    # one process per chip the launcher set up on this host (every attached chip by default)
    nprocs = len(os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) // int(os.environ.get("NNODES", "1"))
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
    mp.spawn(_mp_fn, args=(n,), nprocs=nprocs)
    launch_nested(n)


if __name__ == "__main__":
    main()
