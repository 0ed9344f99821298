"""Trains a small regressor, then evaluates it with the project's evaluation script."""

import torch
import torch.nn as nn

from evaluate import evaluate
from _torchtpu import (
    torchtpu_optimizer_step,
    torchtpu_rank,
    torchtpu_rank0_print,
    torchtpu_world_size,
)


def main():
    device = torch.device("tpu:0")
    torchtpu_rank0_print(f"rank {torchtpu_rank()} of {torchtpu_world_size()}")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 4)
    y = (x.sum(dim=1, keepdim=True) * 0.5).to(device)
    x = x.to(device)
    for step in range(4):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        torchtpu_optimizer_step(optimizer)
        torchtpu_rank0_print(f"step {step} loss={loss.item():.6f}")
    evaluate(model, x, y)


if __name__ == "__main__":
    main()
