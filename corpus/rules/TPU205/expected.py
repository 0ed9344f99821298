# TPU205 master-print
import sys

import torch_xla.core.xla_model as xm
import torch.distributed as dist

if not dist.is_initialized() or dist.get_rank() == 0:
    print("hello")
if not dist.is_initialized() or dist.get_rank() == 0:
    print("to stderr", file=sys.stderr, flush=True)
for i in range(2): xm.master_print(i)  # compound statement on one line
xm.master_print("loss", 0.5, sep=": ")  # not in master_print's signature: reported
