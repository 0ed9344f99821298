# TPU108 xla-checkpoint
import torch
from torch_xla.distributed.fsdp import checkpoint_module

layer = torch.nn.Linear(4, 4)
x = torch.randn(2, 4, requires_grad=True)
y = torch.utils.checkpoint.checkpoint(layer, x)
z = torch.utils.checkpoint.checkpoint(layer, x, use_reentrant=False)
wrapped = checkpoint_module(layer)  # module wrapper: reported
