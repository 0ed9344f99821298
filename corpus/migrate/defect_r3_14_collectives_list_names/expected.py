"""Gradients averaged by hand, and eval counts reduced and gathered, from lists held in names.

Issue 43, item 14: `xm.all_reduce(xm.REDUCE_SUM, grads)` with `grads` built by a comprehension
or by appends became `grads.clone()` and a bare `reduced` statement (AttributeError: a list has
no clone; the in-place reduction lost), and `xm.all_gather(outputs)` of a list in a name raised
`'list' object has no attribute 'movedim'`. torch_xla reduces a list in place.
"""
import os
import sys

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


def _mp_fn(index, steps):
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    world = dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Linear(5, 3).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(7 + dist.get_rank())
    for step in range(steps):
        x = torch.randn(6, 5, generator=g).to(device)
        target = torch.randint(0, 3, (6,), generator=g).to(device)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), target)
        loss.backward()
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        for tensor in grads:  # xm.all_reduce reduced a list in place, then scaled it
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
            tensor.mul_(1.0 / world)
        opt.step()

    # evaluation: per-rank counts summed over the job, predictions gathered
    x = torch.randn(10, 5, generator=g).to(device)
    target = torch.randint(0, 3, (10,), generator=g).to(device)
    with torch.no_grad():
        pred = model(x).argmax(dim=1)
    counts = []
    counts.append((pred == target).sum().float())
    counts.append(torch.tensor(float(len(target)), device=device))
    for tensor in counts:  # xm.all_reduce reduced a list in place
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    outputs = [pred.float(), target.float()]
    all_pred, all_target = torchtpu_all_gather(outputs)
    accuracy = (counts[0] / counts[1]).item()
    weight_norm = model.weight.norm().item()
    print(f"rank {dist.get_rank()} of {world} accuracy={accuracy:.6f} gathered={len(all_pred)} weights={weight_norm:.6f}", flush=True)


if __name__ == "__main__":
    torchtpu_spawn(_mp_fn, args=(int(sys.argv[1]) if len(sys.argv) > 1 else 3,))
