"""Distributed evaluation: each core scores its shard, predictions are all_gathered.

Launched on every core of the host; the master writes the summary file.
"""
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def torchtpu_all_gather(value, dim=0):
    """`value` (or each tensor of a list) gathered from every rank along `dim`."""
    if not dist.is_initialized():
        return value
    if isinstance(value, list):
        return [torch.tpu.ops.all_gather_dim(t, dim) for t in value]
    return torch.tpu.ops.all_gather_dim(value, dim)


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


NUM_SAMPLES = 48
NUM_CLASSES = 5
FEATURES = 20


def make_eval_set():
    # a fixed "teacher" decides the labels; the model is a noisy copy of it
    g = torch.Generator().manual_seed(2024)
    teacher = torch.randn(NUM_CLASSES, FEATURES, generator=g)
    x = torch.randn(NUM_SAMPLES, FEATURES, generator=g)
    y = (x @ teacher.t()).argmax(dim=1)
    noisy = teacher + 0.8 * torch.randn(NUM_CLASSES, FEATURES, generator=g)
    return x, y, noisy


def evaluate(index):
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    rank, world = dist.get_rank(), dist.get_world_size()

    x, y, weight = make_eval_set()
    model = nn.Linear(FEATURES, NUM_CLASSES, bias=False)
    with torch.no_grad():
        model.weight.copy_(weight)
    model = model.to(device).eval()

    # this rank's shard (contiguous block)
    per_rank = NUM_SAMPLES // world
    xs = x[rank * per_rank:(rank + 1) * per_rank].to(device)
    ys = y[rank * per_rank:(rank + 1) * per_rank].to(device)

    with torch.no_grad():
        logits = model(xs)
        local_preds = logits.argmax(dim=1)
        local_hits = (local_preds == ys).long()

    preds = torchtpu_all_gather(local_preds, dim=0)
    hits = torchtpu_all_gather(local_hits, dim=0)
    n = preds.shape[0]
    accuracy = hits.sum().item() / n
    print(f"rank {rank} of {world} gathered={n} accuracy={accuracy:.6f}")

    dist.barrier()
    if dist.get_node_local_rank(fallback_rank=0) == 0:
        with open("results.txt", "w") as f:
            f.write(f"samples {n}\n")
            f.write(f"accuracy {accuracy:.6f}\n")
        print("wrote results.txt")


if __name__ == "__main__":
    torchtpu_spawn(evaluate)
