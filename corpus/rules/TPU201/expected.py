# TPU201 world-size
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
import torch.distributed as dist

a = dist.get_world_size()
b = dist.get_world_size()
c = dist.get_world_size() if hasattr(xm, "xla_device_world_size") else 1
get_ws = xr.world_size  # referenced, not called: reported
