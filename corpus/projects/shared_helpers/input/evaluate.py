"""Evaluates a regressor on a batch; run alone, on a fresh one."""

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr


def evaluate(model, x, y):
    with torch.no_grad():
        loss = nn.functional.mse_loss(model(x), y)
    xm.master_print(f"rank {xr.global_ordinal()} eval loss={loss.item():.6f}")


if __name__ == "__main__":
    torch.manual_seed(1)
    device = xm.xla_device()
    x = torch.ones(2, 4, device=device)
    evaluate(nn.Linear(4, 1).to(device), x, torch.zeros(2, 1, device=device))
