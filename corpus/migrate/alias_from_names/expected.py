import os
import torch
import torch.distributed as dist

device = torch.device("tpu:0")
torch.manual_seed(0)
model = torch.nn.Linear(8, 8).to(device)
print("ordinal", dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0")), "of", dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1")), dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1")))
for _ in range(3):
    model(torch.randn(2, 8).to(device)).sum().backward()
print(f"grad={model.weight.grad.sum().item():.6f}")
