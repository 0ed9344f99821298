# TPU201 world-size
import os
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
import torch.distributed as dist

a = dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1"))
b = dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1"))
c = (dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1"))) if hasattr(xm, "xla_device_world_size") else 1
hooks.append(xr.world_size)  # passed as a value, not called: reported
