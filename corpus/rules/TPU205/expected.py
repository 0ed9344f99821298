# TPU205 master-print
import os
import sys

import torch_xla.core.xla_model as xm
import torch.distributed as dist

if (dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))) == 0:
    print("hello")
if (dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))) == 0:
    print("to stderr", file=sys.stderr, flush=True)
for i in range(2): xm.master_print(i)  # compound statement on one line
xm.master_print("loss", 0.5, sep=": ")  # not in master_print's signature: reported


def log(meter, x, loss):
    # arguments that call something run on every rank first, as torch_xla evaluated them
    shown = (f"avg={meter.update(x):.3f}", loss.item(),)  # evaluated on every rank, as master_print's arguments were
    if (dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))) == 0:
        print(*shown)
