import os
import torch
import torch.distributed as dist

device = torch.device("tpu")
model = torch.nn.Linear(8, 8).to(device)
print("ordinal", dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0")), "of", dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1")), dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1")))
for _ in range(3):
    model(torch.randn(2, 8, device=device)).sum().backward()
