import os
import torch
import torch.distributed as dist


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def torchtpu_world_size():
    """The job's process count: the process group's, else torchrun's `WORLD_SIZE` (1 in a single process)."""
    if dist.is_initialized():
        return dist.get_world_size()
    return int(os.environ.get("WORLD_SIZE", "1"))


device = torch.device("tpu:0")
torch.manual_seed(0)
model = torch.nn.Linear(8, 8).to(device)
print("ordinal", torchtpu_rank(), "of", torchtpu_world_size(), torchtpu_world_size())
for _ in range(3):
    model(torch.randn(2, 8).to(device)).sum().backward()
print(f"grad={model.weight.grad.sum().item():.6f}")
