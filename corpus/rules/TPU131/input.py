# TPU131 unlazy
import torch_xla.core.xla_model as xm

xm.unlazy([loss, logits])
print(loss.item())
