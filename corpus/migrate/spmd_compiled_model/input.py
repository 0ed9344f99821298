# SPMD data parallel with a compiled model (issue 43, item 17): `torch.compile(model,
# backend="openxla")` trains on the sharded batch; its loss is a sum over the batch divided by
# the batch size, read after `backward`.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

xr.use_spmd()


def main():
    device = xm.xla_device()
    num_devices = xr.global_runtime_device_count()
    mesh = xs.Mesh(np.arange(num_devices), (num_devices,), ("data",))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
    compiled = torch.compile(model, backend="openxla")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(3)
    inputs, targets = torch.randn(64, 6, generator=gen), torch.randn(64, 2, generator=gen)
    for step in range(3):
        x, y = inputs[step * 16:(step + 1) * 16].to(device), targets[step * 16:(step + 1) * 16].to(device)
        xs.mark_sharding(x, mesh, ("data", None))
        xs.mark_sharding(y, mesh, ("data", None))
        optimizer.zero_grad()
        loss = F.mse_loss(compiled(x), y, reduction="sum") / x.size(0)
        loss.backward()
        optimizer.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.6f}")
    weights = sum(p.detach().double().sum().item() for p in model.parameters())
    print(f"checksum {weights:.8f}")


if __name__ == "__main__":
    main()
