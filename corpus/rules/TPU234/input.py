# TPU234 spmd-slice-read: a value computed from a split batch, read before it is made global, is
# reported (and keeps the split from converting); a loss read after its `backward()` and a value
# all-reduced first are global, and left alone.
import numpy as np
import torch
import torch.distributed as dist
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

xr.use_spmd()
mesh = xs.Mesh(np.arange(4), (4,), ("data",))
model = torch.nn.Linear(4, 2)


def step(x, y):
    xs.mark_sharding(x, mesh, ("data", None))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    print(loss.item())
    loss.backward()
    print(f"{loss.item():.4f}")
    hits = (model(x).argmax(1) == y).sum()
    dist.all_reduce(hits, op=dist.ReduceOp.SUM)
    return hits.item(), float((model(x).argmax(1) == y).float().mean())
