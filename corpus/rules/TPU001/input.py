# TPU001 xla-import: imports removed once nothing uses them
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met  # still used below: must stay

device = xm.xla_device()
assert met.counter_value("CompileTime") > 0
