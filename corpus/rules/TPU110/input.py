# TPU110 mark-step
import torch_xla
import torch_xla.core.xla_model as xm

for _ in range(3):
    xm.mark_step()
    torch_xla.sync()
xm.mark_step(wait=True)
torch_xla.sync(wait=True)
step_fn = xm.mark_step  # referenced, not called: reported
