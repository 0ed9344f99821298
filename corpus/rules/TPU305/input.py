# TPU305 xla-autocast-state: the XLA autocast state becomes the tpu one
import torch

if not torch._C.is_autocast_xla_enabled():
    torch._C.set_autocast_xla_dtype(torch.bfloat16)
    torch._C.set_autocast_xla_enabled(True)
print(torch._C.get_autocast_xla_dtype())
