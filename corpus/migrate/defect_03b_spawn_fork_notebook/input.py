# %% [markdown]
# # Data-parallel training from a notebook
# Colab/Kaggle TPU notebooks must fork: the worker lives in the notebook's `__main__`.

# %%
import os
import sys

import torch, torch.distributed as dist
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
import torch_xla.distributed.xla_multiprocessing as xmp

NUM_CORES = int(sys.argv[1]) if len(sys.argv) > 1 else 1  # 8 on a v3-8
STEPS = 3

# %%
def train_loop(index, flags):
    rank, world = xr.global_ordinal(), xr.world_size()
    device = xm.xla_device()
    torch.manual_seed(0)
    model = nn.Linear(8, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=flags["lr"])
    g = torch.Generator().manual_seed(100 + rank)  # different data on every core
    for step in range(STEPS):
        x = torch.randn(16, 8, generator=g).to(device)
        y = torch.randn(16, 2, generator=g).to(device)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
    checksum = sum(p.sum().item() for p in model.parameters())
    print(f"core {index}: rank {rank} of {world} checksum={checksum:.6f}", flush=True)

# %%
flags = {"lr": 0.1}
xmp.spawn(train_loop, args=(flags,), nprocs=NUM_CORES, start_method="fork")
