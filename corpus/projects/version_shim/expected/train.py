"""Trains a small regressor through the project's PyTorch/XLA compatibility layer."""
import os
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn

from compat import get_device


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def torchtpu_rank0_print(*args, **kwargs):
    """`print(*args, **kwargs)` on rank 0 only; every rank has evaluated the arguments."""
    if torchtpu_rank() == 0:
        print(*args, **kwargs)


def torchtpu_world_size():
    """The job's process count: the process group's, else torchrun's `WORLD_SIZE` (1 in a single process)."""
    if dist.is_initialized():
        return dist.get_world_size()
    return int(os.environ.get("WORLD_SIZE", "1"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()

    device = get_device()
    print(f"rank {torchtpu_rank()} of {torchtpu_world_size()}")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Linear(12, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x = torch.randn(16, 6)
    y = (x[:, :1] * 2 - x[:, 1:2]).to(device)
    x = x.to(device)
    for step in range(args.steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        torchtpu_rank0_print(f"step {step} loss={loss.item():.6f}")
    checksum = sum(p.sum() for p in model.parameters())
    print(f"checksum={checksum.item():.6f}")


if __name__ == "__main__":
    main()
