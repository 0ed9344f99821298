# %% [markdown]
# # Quick TPU sanity check (exported from Colab)
# Run each cell in order.

# %%

# %%
import torch
import torch_xla
import torch_xla.runtime as xr

print(torch.__version__, torch_xla.__version__)
print(
    "devices:",
    xr.global_runtime_device_count(),
    (torch.accelerator.current_accelerator() or torch.device("cpu")).type,
)

# %%
torch.manual_seed(0)
dev = torch.device("tpu:0")
a = torch.randn(64, 64).to(dev)
b = torch.randn(64, 64).to(dev)
c = a @ b
c.shape

# %%
print(c[0, :4].cpu())
