# TPU001 xla-import: imports removed once nothing uses them
import torch
import torch_xla.debug.metrics as met  # still used below: must stay

device = torch.device("tpu:0")
assert met.counter_value("CompileTime") > 0
