"""2D data/model parallel linear layer with PyTorch/XLA SPMD."""
import numpy as np
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

xr.use_spmd()

num_devices = xr.global_runtime_device_count()
mesh_shape = (num_devices // 2, 2)
device_ids = np.array(range(num_devices))
mesh = xs.Mesh(device_ids, mesh_shape, ("data", "model"))
xs.set_global_mesh(mesh)

torch.manual_seed(0)
device = xm.xla_device()
weight = torch.randn(16, 32).to(device)
xs.mark_sharding(weight, mesh, (None, "model"))

for step in range(3):
    batch = torch.randn(8, 16).to(device)
    xs.mark_sharding(batch, mesh, ("data", None))
    out = batch @ weight
    loss = out.float().pow(2).mean()
    xm.mark_step()
    print(step, f"{loss.item():.6f}")
