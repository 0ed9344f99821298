# TPU219 xla-collectives: reported only
import torch_xla.core.xla_model as xm
from torch_xla.core.functions import all_gather

shard = xm.reduce_scatter(xm.REDUCE_SUM, grads, 1.0, 0, 8)
xm.collective_broadcast([weights], root_ordinal=0)
xm.reduce_gradients(optimizer)
full = all_gather(x, dim=0)
