# %% [markdown]
# # Quick TPU sanity check (exported from Colab)
# Run each cell in order.

# %%
import os
os.environ["PJRT_DEVICE"] = "TPU"

# %%
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

print(torch.__version__, torch_xla.__version__)
print("devices:", xr.global_runtime_device_count(), xm.xla_device_hw(xm.xla_device()))

# %%
torch.manual_seed(0)
dev = xm.xla_device()
a = torch.randn(64, 64).to(dev)
b = torch.randn(64, 64).to(dev)
c = a @ b
xm.mark_step()
c.shape

# %%
print(c[0, :4].cpu())
