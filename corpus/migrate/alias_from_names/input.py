import torch
from torch_xla.core.xla_model import mark_step, xla_device as dev
from torch_xla.core.xla_model import get_ordinal, xrt_world_size
from torch_xla.runtime import world_size

device = dev()
torch.manual_seed(0)
model = torch.nn.Linear(8, 8).to(device)
print("ordinal", get_ordinal(), "of", xrt_world_size(), world_size())
for _ in range(3):
    model(torch.randn(2, 8).to(device)).sum().backward()
    mark_step()
print(f"grad={model.weight.grad.sum().item():.6f}")
