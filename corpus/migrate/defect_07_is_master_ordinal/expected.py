"""Only the master process logs the summary and writes the marker the job scheduler waits for."""
import os
import argparse

import torch, torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def torchtpu_spawn(
    fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn"
):
    """Run `fn(index, *args)` in one TorchTPU process per chip (every attached chip unless
    `nprocs` says; `nprocs=1` runs it here), each with torchrun's variables. This process's
    environment is left as it was: here the world is still one process."""
    parent_env = os.environ.copy()
    try:
        torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=nprocs)
        chips = os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")
        nodes = int(os.environ.get("NNODES", "1"))
        local = len(chips) // nodes
        os.environ.setdefault("MASTER_ADDR", "localhost")
        os.environ.setdefault("MASTER_PORT", "29500")
        os.environ["LOCAL_WORLD_SIZE"] = str(local)
        os.environ["WORLD_SIZE"] = str(nodes * local)
        if nprocs != 1:
            worker_args = (fn, args)
            return mp.start_processes(
                torchtpu_worker, worker_args, local, join, daemon, start_method
            )
        try:
            torchtpu_worker(0, fn, args)
        finally:
            if dist.is_initialized():
                dist.destroy_process_group()
    finally:
        os.environ.clear()
        os.environ.update(parent_env)


def torchtpu_worker(index, fn, args):
    """A process `torchtpu_spawn` started: `fn(index, *args)` with the `LOCAL_RANK` and `RANK`
    that torchrun would give it."""
    os.environ["LOCAL_RANK"] = str(index)
    node = int(os.environ.get("NODE_RANK", "0"))
    os.environ["RANK"] = str(node * int(os.environ["LOCAL_WORLD_SIZE"]) + index)
    fn(index, *args)


def _mp_fn(index, args):
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    torch.manual_seed(0)
    model = nn.Linear(3, 1).to(device)
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3).to(device)
    out = model(x)
    print(f"rank {dist.get_rank()} of {dist.get_world_size()} out_sum={out.sum().item():.6f}", flush=True)

    if dist.get_node_local_rank(fallback_rank=0) == 0:  # local=True by default: one per host
        with open("marker.txt", "x") as f:  # "x": a second writer (or a stale marker) is an error
            f.write(f"done world={dist.get_world_size()}\n")
        print(f"master wrote marker.txt (world {dist.get_world_size()})", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nprocs", type=int, default=1)
    args = parser.parse_args()
    torchtpu_spawn(_mp_fn, args=(args,), nprocs=args.nprocs)
