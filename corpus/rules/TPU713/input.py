# TPU713 other-xla-hardware
# A Tenstorrent script: torch_xla drives the TT PJRT plugin, not a TPU. Nothing here is rewritten.
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

xr.set_device_type("TT")
device = xm.xla_device()
x = torch.ones(4, device=device)
xm.mark_step()
print(x.cpu())
