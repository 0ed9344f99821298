"""Device-agnostic helpers: sync only when running on an XLA device."""
import os
import torch, torch.distributed as dist
import torch.nn as nn


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def f(d):
    pass


def maybe_sync(device):
    pass


def describe(device):
    return f"{device.type} device (accelerator={device.type == 'tpu'})"


def main():
    device = torch.device("tpu:0")
    print(describe(device))
    torch.manual_seed(0)
    model = nn.Linear(4, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(7)
    for step in range(3):
        x = torch.randn(8, 4, generator=g).to(device)
        y = torch.randn(8, 2, generator=g).to(device)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        f(device)
        print(f"step {step} loss={loss.item():.6f} on {loss.device}")
    maybe_sync(device)
    if torchtpu_rank() == 0:
        print(f"weight sum={model.weight.sum().item():.6f}")


if __name__ == "__main__":
    main()
