# TPU001 xla-import: imports removed once nothing uses them, and so are assignments aliasing them
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met  # still used below: must stay
import torch_xla.runtime as _xr

try:  # torch_xla >= 2.3
    import torch_xla.distributed.spmd as xs
except ImportError:  # older releases: another name for the same module
    import torch_xla.experimental.xla_sharding as xs

xr = _xr  # an alias: its uses are converted, then it goes
world_size = getattr(xr, "world_size")
if hasattr(torch_xla, "sync"):  # a version test whose arms both go
    sync = torch_xla.sync
else:
    sync = xm.mark_step

device = xm.xla_device()
print(world_size(), xr.global_ordinal())
sync()
assert met.counter_value("CompileTime") > 0
