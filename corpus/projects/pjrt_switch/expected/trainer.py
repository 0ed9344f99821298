import os

import torch
import torch.nn as nn

# The project's own switch: the launcher sets it on accelerator hosts.
USE_XLA = bool(os.environ.get("PJRT_DEVICE"))


def pick_device():
    if USE_XLA:
        return torch.device("tpu:0")
    return torch.device("cpu")


def main(steps):
    torch.manual_seed(0)
    device = pick_device()
    print(f"training on {device}")
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.randn(steps, 4, 8)
    target = torch.randint(0, 2, (steps, 4))
    for step in range(steps):
        x, y = data[step].to(device), target[step].to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss={loss.item():.6f}")
