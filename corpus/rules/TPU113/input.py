# TPU113 is-xla-tensor
import torch_xla.core.xla_model as xm

def on_device(t):
    return xm.is_xla_tensor(t)

if not xm.is_xla_tensor(batch[0]):
    batch = [b.to("xla") for b in batch]
