# TPU108 xla-checkpoint
import torch
import torch_xla.utils.checkpoint as xcp
from torch_xla.distributed.fsdp import checkpoint_module

layer = torch.nn.Linear(4, 4)
x = torch.randn(2, 4, requires_grad=True)
y = xcp.checkpoint(layer, x)
z = xcp.checkpoint(layer, x, use_reentrant=False)
wrapped = checkpoint_module(layer)  # module wrapper: reported
