# TPU205 master-print
import os
import sys

import torch_xla.core.xla_model as xm
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


torchtpu_rank0_print("hello")
torchtpu_rank0_print("to stderr", file=sys.stderr, flush=True)
for i in range(2): torchtpu_rank0_print(i)  # compound statement on one line
xm.master_print("loss", 0.5, sep=": ")  # not in master_print's signature: reported


def log(meter, x, loss):
    # arguments that call something run on every rank first, as torch_xla evaluated them
    torchtpu_rank0_print(f"avg={meter.update(x):.3f}", loss.item())
