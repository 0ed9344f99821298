# TPU218 broadcast-master-param
import torch
import torch_xla.core.xla_model as xm

model = torch.nn.Linear(4, 4)
xm.broadcast_master_param(model)
