"""Ported from PyTorch/XLA: we used to call xm.mark_step() and torch_xla.sync() here.

Example of the old code, kept for reference:

    import torch_xla.core.xla_model as xm
    device = xm.xla_device()
    xm.mark_step()
"""
import torch

# xm.optimizer_step(optimizer) was replaced by optimizer.step() under DDP
# device = torch.device("xla")


def step(model, optimizer, x):
    loss = model(x).sum()  # no xm.mark_step() needed any more
    loss.backward()
    optimizer.step()
    return loss


if __name__ == "__main__":
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        print(f"{step(model, optimizer, torch.randn(2, 4)).item():.6f}")
