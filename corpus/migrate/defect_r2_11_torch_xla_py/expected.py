"""A 2019-era torch_xla script: the package's Python modules still lived in torch_xla_py."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import torch.distributed as dist


def train():
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 10), torch.randint(0, 3, (64,)))
    loader = DataLoader(data, batch_size=16)
    device = torch.device("tpu:0")
    model = nn.Linear(10, 3).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(loader):
        (x, y) = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), (x, y))
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if dist.is_initialized():
            for grad in [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]:
                dist.all_reduce(grad)
                grad /= dist.get_world_size()
        optimizer.step()
        print(f"step {step} loss={loss.item():.6f}")
    print(f"checksum={sum(p.norm().item() for p in model.parameters()):.6f}")


if __name__ == "__main__":
    train()
