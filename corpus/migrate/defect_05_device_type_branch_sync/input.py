"""Device-agnostic helpers: sync only when running on an XLA device."""
import torch, torch.distributed as dist
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr


def f(d):
    if d.type == "xla":
        xm.mark_step()


def maybe_sync(device):
    if device.type == "xla": xm.mark_step()


def describe(device):
    return f"{device.type} device (accelerator={device.type == 'xla'})"


def main():
    device = xm.xla_device()
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
    if xr.global_ordinal() == 0:
        print(f"weight sum={model.weight.sum().item():.6f}")


if __name__ == "__main__":
    main()
