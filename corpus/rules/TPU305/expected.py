# TPU305 xla-autocast-state: the XLA autocast state becomes the tpu one
import torch

if not torch.is_autocast_enabled("tpu"):
    torch.set_autocast_dtype("tpu", torch.bfloat16)
    torch.set_autocast_enabled("tpu", True)
print(torch.get_autocast_dtype("tpu"))
