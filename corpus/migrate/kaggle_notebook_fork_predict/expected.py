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
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def torchtpu_optimizer_step(optimizer):
    """Average the gradients over the process group (if any), then `optimizer.step()`."""
    if dist.is_initialized():
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    dist.all_reduce(param.grad)
                    param.grad /= dist.get_world_size()
    return optimizer.step()


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def torchtpu_rank0_print(*args, **kwargs):
    """`print(*args, **kwargs)` on rank 0 only; every rank has evaluated the arguments."""
    if torchtpu_rank() == 0:
        print(*args, **kwargs)


def torchtpu_save(data, path):
    """`torch.save` of `data` with its tensors on the CPU (loads without a chip)."""
    cpu = torch.utils._pytree.tree_map_only(torch.Tensor, torch.Tensor.cpu, data)
    torch.save(cpu, path)


def torchtpu_spawn(
    fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn"
):
    """Run `fn(index, *args)` in one TorchTPU process per chip (every attached chip unless
    `nprocs` says; `nprocs=1` runs it here), each with torchrun's variables. This process's
    environment is left as it was: here the world is still one process."""
    parent_env = os.environ.copy()
    try:
        torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=nprocs)
        chips = os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")
        nodes = int(os.environ.get("NNODES", "1"))
        local = len(chips) // nodes
        os.environ.setdefault("MASTER_ADDR", "localhost")
        os.environ.setdefault("MASTER_PORT", "29500")
        os.environ["LOCAL_WORLD_SIZE"] = str(local)
        os.environ["WORLD_SIZE"] = str(nodes * local)
        if nprocs != 1:
            worker_args = (fn, args)
            return mp.start_processes(
                torchtpu_worker, worker_args, local, join, daemon, start_method
            )
        try:
            torchtpu_worker(0, fn, args)
        finally:
            if dist.is_initialized():
                dist.destroy_process_group()
    finally:
        os.environ.clear()
        os.environ.update(parent_env)


def torchtpu_worker(index, fn, args):
    """A process `torchtpu_spawn` started: `fn(index, *args)` with the `LOCAL_RANK` and `RANK`
    that torchrun would give it."""
    os.environ["LOCAL_RANK"] = str(index)
    node = int(os.environ.get("NODE_RANK", "0"))
    os.environ["RANK"] = str(node * int(os.environ["LOCAL_WORLD_SIZE"]) + index)
    fn(index, *args)


def torchtpu_world_size():
    """The job's process count: the process group's, else torchrun's `WORLD_SIZE` (1 in a single process)."""
    if dist.is_initialized():
        return dist.get_world_size()
    return int(os.environ.get("WORLD_SIZE", "1"))


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
    sampler = DistributedSampler(dataset, num_replicas=torchtpu_world_size(), rank=torchtpu_rank(), shuffle=shuffle)
    return DataLoader(dataset, batch_size=FLAGS["batch_size"], sampler=sampler, drop_last=False)


# In[4]:


def _mp_fn(rank, flags):
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    torch.manual_seed(flags["seed"])
    device = torch.device("tpu:0")
    model = HouseMLP().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=flags["lr"])
    loader = sharded(TensorDataset(torch.from_numpy(train_x), torch.from_numpy(train_y)), shuffle=False)
    start = time.time()
    for epoch in range(flags["epochs"]):
        model.train()
        losses = []
        for x, y in loader:
            x, y = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), (x, y))
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            torchtpu_optimizer_step(optimizer)
            losses.append(loss.item())
        torchtpu_rank0_print(f"epoch {epoch} train_loss={np.mean(losses):.6f}")
    print(f"core {rank}: ordinal {dist.get_rank()} of {dist.get_world_size()} done in {time.time() - start:.1f}s", flush=True)
    if dist.get_node_local_rank(fallback_rank=0) == 0:
        torchtpu_save(model.state_dict(), "model.bin")
    if dist.is_initialized():
        dist.barrier()


# In[5]:


torchtpu_spawn(_mp_fn, args=(FLAGS,), start_method="fork")


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
