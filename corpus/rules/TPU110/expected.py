# TPU110 mark-step
import time

import torch_xla.core.xla_model as xm
import torch

for _ in range(3):
    pass
torch.accelerator.synchronize()
torch.accelerator.synchronize()

# Timing code: a clock read right after it (next statement, or after the loop it ends).
start = time.perf_counter()
for _ in range(3):
    step()
    torch.accelerator.synchronize()
elapsed = time.perf_counter() - start
tic = time.time()
step()
torch.accelerator.synchronize()
print(f"one step: {time.time() - tic:.3f}s")
hooks.append(xm.mark_step)  # passed as a value, not called: reported
