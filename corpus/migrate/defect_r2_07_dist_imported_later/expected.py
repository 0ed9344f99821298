"""A script grown cell by cell (issue 19, defect 7): the helpers at the top use xm, and
`torch.distributed` is imported only further down, where a later cell needed it. Code a fix
inserts into the helpers must not rely on that later import: they run before it does.
"""
import os
import torch
import torch.distributed as dist


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def torchtpu_rank0_print(*args, **kwargs):
    """`print(*args, **kwargs)` on rank 0 only; every rank has evaluated the arguments."""
    if torchtpu_rank() == 0:
        print(*args, **kwargs)


def log(message):
    torchtpu_rank0_print(message)


def wait_for_everyone():
    if dist.is_initialized():
        dist.barrier()


device = torch.device("tpu:0")
weights = torch.arange(6, dtype=torch.float32).reshape(2, 3).to(device)
log(f"sum={weights.sum().item():.6f}")
wait_for_everyone()

# --- a later cell ---

log(f"distributed available={dist.is_available()}")
