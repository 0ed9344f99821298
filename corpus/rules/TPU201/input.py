# TPU201 world-size
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

a = xm.xrt_world_size()
b = xr.world_size()
c = xm.xla_device_world_size() if hasattr(xm, "xla_device_world_size") else 1
hooks.append(xr.world_size)  # passed as a value, not called: reported
