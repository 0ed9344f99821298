# TPU110 mark-step
import torch_xla.core.xla_model as xm
import torch

for _ in range(3):
    pass
torch.accelerator.synchronize()
torch.accelerator.synchronize()
step_fn = xm.mark_step  # referenced, not called: reported
