"""A 2019-era torch_xla script: the package's Python modules still lived in torch_xla_py."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import torch_xla
import torch_xla_py.parallel_loader as pl
import torch_xla_py.xla_model as xm


def train():
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 10), torch.randint(0, 3, (64,)))
    loader = DataLoader(data, batch_size=16)
    device = xm.xla_device()
    model = nn.Linear(10, 3).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(pl.ParallelLoader(loader, [device]).per_device_loader(device)):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        xm.optimizer_step(optimizer)
        xm.mark_step()
        print(f"step {step} loss={loss.item():.6f}")
    print(f"checksum={sum(p.norm().item() for p in model.parameters()):.6f}")


if __name__ == "__main__":
    train()
