"""Data parallel training with the gradients averaged by hand.

Before xm.optimizer_step did it for them, people wrote the all_reduce themselves:
sum every gradient over the replicas, scale by 1/world, then step.
"""
import os
import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


def torchtpu_world_size():
    """The job's process count: the process group's, else torchrun's `WORLD_SIZE` (1 in a single process)."""
    if dist.is_initialized():
        return dist.get_world_size()
    return int(os.environ.get("WORLD_SIZE", "1"))


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


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--lr", type=float, default=0.1)
    return p.parse_args()


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.fc1 = nn.Linear(12, 24)
        self.fc2 = nn.Linear(24, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def _mp_fn(index, flags):
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    dist.barrier()
    rank = dist.get_rank()
    world = dist.get_world_size()
    device = torch.device("tpu:0")

    # every replica builds the same full dataset on the CPU and keeps its own slice
    torch.manual_seed(1234)
    inputs = torch.randn(flags.batch * 4, 12)
    targets = torch.randint(0, 3, (flags.batch * 4,))
    inputs, targets = inputs[rank::world], targets[rank::world]

    model = Net().to(device)  # same seed -> same initial weights everywhere
    optimizer = torch.optim.SGD(model.parameters(), lr=flags.lr)

    for step in range(flags.steps):
        lo = (step * flags.batch // world) % inputs.shape[0]
        x = inputs[lo:lo + flags.batch // world].to(device)
        y = targets[lo:lo + flags.batch // world].to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        # average the gradients over all replicas (in place)
        for tensor in [p.grad for p in model.parameters()]:  # xm.all_reduce reduced a list in place, then scaled it
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
            tensor.mul_(1.0 / torchtpu_world_size())
        optimizer.step()
        if dist.get_node_local_rank(fallback_rank=0) == 0:
            print(f"step {step} loss={loss.item():.6f}")

    checksum = sum(p.detach().norm().item() for p in model.parameters())
    print(f"rank {rank} of {world} checksum={checksum:.6f}")


if __name__ == '__main__':
    flags = get_args()
    torchtpu_spawn(_mp_fn, args=(flags,), nprocs=None)
