"""A script grown cell by cell (issue 19, defect 7): the helpers at the top use xm, and
`torch.distributed` is imported only further down, where a later cell needed it. Code a fix
inserts into the helpers must not rely on that later import: they run before it does.
"""
import torch
import torch_xla.core.xla_model as xm


def log(message):
    xm.master_print(message)


def wait_for_everyone():
    xm.rendezvous("checkpoint")


device = xm.xla_device()
weights = torch.arange(6, dtype=torch.float32).reshape(2, 3).to(device)
log(f"sum={weights.sum().item():.6f}")
wait_for_everyone()

# --- a later cell ---
import torch.distributed as dist  # noqa: E402

log(f"distributed available={dist.is_available()}")
