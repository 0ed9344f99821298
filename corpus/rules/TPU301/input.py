# TPU301 xla-autocast
import torch
import torch_xla.amp
import torch_xla.core.xla_model as xm
from torch_xla.amp import autocast

device = xm.xla_device()
with autocast(device):
    pass
with torch_xla.amp.autocast(device, dtype=torch.bfloat16):
    pass
with autocast(device, dtype=torch.float16):  # fp16 on TPU: carried over as written
    pass
with torch.autocast("xla", dtype=torch.bfloat16):
    pass
with torch.autocast("cuda", dtype=torch.float16):  # CUDA autocast: untouched
    pass
