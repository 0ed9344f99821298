"""A 2019-era torch_xla script: the package's Python modules still lived in torch_xla_py."""
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def torchtpu_optimizer_step(optimizer):
    """Average the gradients over the process group (if any), then `optimizer.step()`."""
    if dist.is_initialized():
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    dist.all_reduce(param.grad)
                    param.grad /= dist.get_world_size()
    return optimizer.step()


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
        torchtpu_optimizer_step(optimizer)
        print(f"step {step} loss={loss.item():.6f}")
    print(f"checksum={sum(p.norm().item() for p in model.parameters()):.6f}")


if __name__ == "__main__":
    train()
