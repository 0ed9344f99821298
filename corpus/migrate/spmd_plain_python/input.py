"""Issue 43, item 25: an SPMD regression script started with plain `python`, the way torch_xla
ran it (one process driving every chip). No launch script comes with it."""
import numpy as np
import torch
import torch_xla
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

xr.use_spmd()
num_devices = xr.global_runtime_device_count()
mesh = xs.Mesh(np.arange(num_devices), (num_devices, 1), ("data", "model"))
device = torch_xla.device()

torch.manual_seed(0)
model = torch.nn.Linear(4, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
gen = torch.Generator().manual_seed(2)
features = torch.randn(32, 4, generator=gen)
target = features @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.25
for step in range(4):
    x, y = features.to(device), target.to(device)
    xs.mark_sharding(x, mesh, ("data", None))
    xs.mark_sharding(y, mesh, ("data", None))
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    torch_xla.sync()
    print(f"step {step} mse {loss.item():.6f}")
print("weight", [f"{w:.6f}" for w in model.weight.detach().cpu().flatten().tolist()])
