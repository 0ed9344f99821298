"""Evaluation across replicas: each replica scores its shard, xm.mesh_reduce combines the
scores with small lambdas (the usual form in torch_xla evaluation scripts)."""
import os
import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def torchtpu_mesh_reduce(data, reduce_fn):
    """`reduce_fn` of the list of every rank's `data` (`[data]` in a single process)."""
    if not dist.is_initialized():
        return reduce_fn([data])
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, data)
    return reduce_fn(gathered)


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


def _mp_fn(index, num_cores):
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 3).to(device)
    data = torch.randn(64, 8)
    labels = torch.randint(0, 3, (64,))
    shard = slice(dist.get_rank(), None, dist.get_world_size())
    with torch.no_grad():
        preds = model(data[shard].to(device)).argmax(dim=1).cpu()
    correct = int((preds == labels[shard]).sum())
    seen = len(preds)
    totals = torchtpu_mesh_reduce((correct, seen), lambda pairs: tuple(map(sum, zip(*pairs))))
    first = torchtpu_mesh_reduce(correct, lambda xs: xs[0])
    best = torchtpu_mesh_reduce(correct / seen, max)
    print(f"rank {dist.get_rank()} of {dist.get_world_size()} accuracy={totals[0] / totals[1]:.6f} first={first} best={best:.6f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_cores", type=int, default=1)
    args = parser.parse_args()
    torchtpu_spawn(_mp_fn, args=(args.num_cores,), nprocs=args.num_cores, start_method="fork")
