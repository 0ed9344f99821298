# TPU228 spmd-mark-sharding: reported only (what it becomes depends on the tensor)
import torch
import torch_xla.distributed.spmd as xs
import torch_xla.distributed.parallel_loader as pl

mesh = xs.get_1d_mesh("data")
model = torch.nn.Linear(16, 4)
xs.mark_sharding(model.weight, mesh, ("data", None))
loader = pl.MpDeviceLoader(data, device, input_sharding=xs.ShardingSpec(mesh, ("data", None)))
for x, y in loader:
    x = xs.mark_sharding_with_gradients(x, mesh, ("data", None))
    xs.clear_sharding(x)
