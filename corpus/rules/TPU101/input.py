# TPU101 xla-device
import torch
import torch_xla
import torch_xla.core.xla_model as xm

a = xm.xla_device()
b = torch_xla.device()
c = xm.xla_device(n=3)  # another device index: reported, not converted
