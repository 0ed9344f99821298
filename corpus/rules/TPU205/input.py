# TPU205 master-print
import sys

import torch_xla.core.xla_model as xm

xm.master_print("hello")
xm.master_print("to stderr", fd=sys.stderr, flush=True)
for i in range(2): xm.master_print(i)  # compound statement on one line
xm.master_print("loss", 0.5, sep=": ")  # not in master_print's signature: reported


def log(meter, x, loss):
    # arguments that call something run on every rank first, as torch_xla evaluated them
    xm.master_print(f"avg={meter.update(x):.3f}", loss.item())
