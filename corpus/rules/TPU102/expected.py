# TPU102 xla-device-string
import torch

x = torch.zeros(2, device="tpu")
y = x.to("tpu:0")
d = torch.device("tpu")
on_tpu = x.device.type == "tpu"
z = x.to("xla:3")  # other index: reported, not converted
name = "xla"  # plain string, not a device: untouched
