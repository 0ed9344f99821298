# TPU201 world-size
import os
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
import torch.distributed as dist


def torchtpu_world_size():
    """The job's process count: the process group's, else torchrun's `WORLD_SIZE` (1 in a single process)."""
    if dist.is_initialized():
        return dist.get_world_size()
    return int(os.environ.get("WORLD_SIZE", "1"))


a = torchtpu_world_size()
b = torchtpu_world_size()
c = torchtpu_world_size() if hasattr(xm, "xla_device_world_size") else 1
hooks.append(xr.world_size)  # passed as a value, not called: reported
