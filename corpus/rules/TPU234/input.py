# TPU234 spmd-slice-read: a value computed from a split batch, read before it is made global, is
# made global where it is read (a mean, a sum or count, a size, per-sample values); one that
# cannot be told is reported (and keeps the split from converting: see `inspect`, whose file
# would keep torch_xla). A loss read after its `backward()` and a value all-reduced first are
# global, and left alone; so is a read a `# noqa: TPU234` marks global by other means, which
# keeps no split waiting.
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


def evaluate(x, y):
    xs.mark_sharding(x, mesh, ("data", None))
    xs.mark_sharding(y, mesh, ("data",))
    with torch.no_grad():
        logits = model(x)
        total_loss = torch.nn.functional.cross_entropy(logits, y, reduction="sum")
        predicted = logits.argmax(dim=1)
    print(f"loss {total_loss.item() / y.size(0):.4f} on {len(y)} samples")
    return predicted.cpu().tolist()


def first_row(x):
    xs.mark_sharding(x, mesh, ("data", None))
    print(model(x)[0])  # noqa: TPU234 (rank 0's first sample is the global batch's)
