"""Evaluates a regressor on a batch; run alone, on a fresh one."""

import torch
import torch.nn as nn
from _torchtpu import torchtpu_rank, torchtpu_rank0_print


def evaluate(model, x, y):
    with torch.no_grad():
        loss = nn.functional.mse_loss(model(x), y)
    torchtpu_rank0_print(f"rank {torchtpu_rank()} eval loss={loss.item():.6f}")


if __name__ == "__main__":
    torch.manual_seed(1)
    device = torch.device("tpu:0")
    x = torch.ones(2, 4, device=device)
    evaluate(nn.Linear(4, 1).to(device), x, torch.zeros(2, 1, device=device))
