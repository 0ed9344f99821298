# TPU102 xla-device-string
import torch

x = torch.zeros(2, device="xla")
y = x.to("xla:0")
d = torch.device("xla")
on_tpu = x.device.type == "xla"
z = x.to("xla:3")  # other index: reported, not converted
name = "xla"  # plain string, not a device: untouched
