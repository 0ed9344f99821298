# TPU101 xla-device
import torch
import torch_xla.core.xla_model as xm

a = torch.device("tpu:0")
b = torch.device("tpu:0")
c = xm.xla_device(n=3)  # another device index: reported, not converted
