# TPU110 mark-step
import time

import torch_xla
import torch_xla.core.xla_model as xm

for _ in range(3):
    xm.mark_step()
    torch_xla.sync()
xm.mark_step(wait=True)
torch_xla.sync(wait=True)

# Timing code: a clock read right after it (next statement, or after the loop it ends).
start = time.perf_counter()
for _ in range(3):
    step()
    xm.mark_step()
elapsed = time.perf_counter() - start
tic = time.time()
step()
torch_xla.sync()
print(f"one step: {time.time() - tic:.3f}s")
hooks.append(xm.mark_step)  # passed as a value, not called: reported
