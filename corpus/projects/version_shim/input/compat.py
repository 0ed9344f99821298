"""One spelling for the PyTorch/XLA APIs that moved between releases."""
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

try:  # torch_xla >= 2.3
    import torch_xla.distributed.spmd as xs
except ImportError:  # 2.1 and 2.2
    import torch_xla.experimental.xla_sharding as xs

if hasattr(torch_xla, "sync"):  # torch_xla >= 2.6
    sync = torch_xla.sync
else:
    sync = xm.mark_step

if hasattr(xr, "world_size"):  # torch_xla >= 2.1
    world_size = xr.world_size
    global_ordinal = xr.global_ordinal
else:
    world_size = xm.xrt_world_size
    global_ordinal = xm.get_ordinal


def get_device():
    return xm.xla_device()


__all__ = ["get_device", "global_ordinal", "sync", "world_size", "xm", "xs"]
