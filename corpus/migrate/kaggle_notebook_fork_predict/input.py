#!/usr/bin/env python
# coding: utf-8

# # House prices: a small MLP on every TPU core
# Train with `xmp.spawn` (fork, so the notebook's globals are shared), then predict the test set
# and write the submission from the notebook itself.

# In[1]:


import os
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


# In[2]:


rng = np.random.default_rng(42)
train_x = rng.normal(size=(96, 8)).astype(np.float32)
train_y = (train_x @ rng.normal(size=8) + 0.1 * rng.normal(size=96)).astype(np.float32)
test_x = rng.normal(size=(40, 8)).astype(np.float32)
test_ids = np.arange(1461, 1461 + len(test_x))
print(train_x.shape, test_x.shape)


# In[3]:


FLAGS = {"lr": 1e-2, "batch_size": 8, "epochs": 2, "seed": 1234}


class HouseMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def sharded(dataset, shuffle):
    sampler = DistributedSampler(dataset, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=shuffle)
    return DataLoader(dataset, batch_size=FLAGS["batch_size"], sampler=sampler, drop_last=False)


# In[4]:


def _mp_fn(rank, flags):
    torch.manual_seed(flags["seed"])
    device = xm.xla_device()
    model = HouseMLP().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=flags["lr"])
    loader = sharded(TensorDataset(torch.from_numpy(train_x), torch.from_numpy(train_y)), shuffle=False)
    start = time.time()
    for epoch in range(flags["epochs"]):
        model.train()
        losses = []
        for x, y in pl.MpDeviceLoader(loader, device):
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            xm.optimizer_step(optimizer)
            losses.append(loss.item())
        xm.master_print(f"epoch {epoch} train_loss={np.mean(losses):.6f}")
    print(f"core {rank}: ordinal {xr.global_ordinal()} of {xr.world_size()} done in {time.time() - start:.1f}s", flush=True)
    xm.save(model.state_dict(), "model.bin")


# In[5]:


xmp.spawn(_mp_fn, args=(FLAGS,), start_method="fork")


# In[6]:


# Inference in the notebook process, with the trained weights
model = HouseMLP()
model.load_state_dict(torch.load("model.bin"))
model.eval()
preds = []
with torch.no_grad():
    for (x,) in sharded(TensorDataset(torch.from_numpy(test_x)), shuffle=False):
        preds.append(model(x).numpy())
preds = np.concatenate(preds)
assert len(preds) == len(test_ids), "one prediction per house"
print(f"{len(preds)} predictions for {len(test_ids)} houses, mean={preds.mean():.6f}")


# In[7]:


with open("submission.csv", "w") as f:
    f.write("Id,SalePrice\n")
    for i, p in zip(test_ids, preds):
        f.write(f"{i},{p:.6f}\n")
print(open("submission.csv").read().count("\n") - 1, "rows written")
