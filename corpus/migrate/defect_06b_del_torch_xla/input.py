"""Train a small regressor on the TPU and save it."""
import torch, torch.distributed as dist
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

DEVICE = torch_xla.device()
del torch_xla  # only needed for the device; keep the module namespace clean

STEPS = 4


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 1)).to(DEVICE)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(3)
    for step in range(STEPS):
        x = torch.randn(10, 6, generator=g).to(DEVICE)
        y = x.sum(dim=1, keepdim=True).to(DEVICE)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss={loss.item():.6f}")
    if xr.global_ordinal() == 0:
        xm.save(model.state_dict(), "regressor.pt")
        print("saved regressor.pt")


if __name__ == "__main__":
    main()
