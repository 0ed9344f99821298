"""Gradients averaged by hand, and eval counts reduced and gathered, from lists held in names.

Issue 43, item 14: `xm.all_reduce(xm.REDUCE_SUM, grads)` with `grads` built by a comprehension
or by appends became `grads.clone()` and a bare `reduced` statement (AttributeError: a list has
no clone; the in-place reduction lost), and `xm.all_gather(outputs)` of a list in a name raised
`'list' object has no attribute 'movedim'`. torch_xla reduces a list in place.
"""
import sys

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


def _mp_fn(index, steps):
    device = xm.xla_device()
    world = xr.world_size()
    torch.manual_seed(0)
    model = nn.Linear(5, 3).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(7 + xr.global_ordinal())
    for step in range(steps):
        x = torch.randn(6, 5, generator=g).to(device)
        target = torch.randint(0, 3, (6,), generator=g).to(device)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), target)
        loss.backward()
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        xm.all_reduce(xm.REDUCE_SUM, grads, scale=1.0 / world)
        opt.step()
        xm.mark_step()

    # evaluation: per-rank counts summed over the job, predictions gathered
    x = torch.randn(10, 5, generator=g).to(device)
    target = torch.randint(0, 3, (10,), generator=g).to(device)
    with torch.no_grad():
        pred = model(x).argmax(dim=1)
    counts = []
    counts.append((pred == target).sum().float())
    counts.append(torch.tensor(float(len(target)), device=device))
    xm.all_reduce(xm.REDUCE_SUM, counts)
    outputs = [pred.float(), target.float()]
    all_pred, all_target = xm.all_gather(outputs, pin_layout=False)
    accuracy = (counts[0] / counts[1]).item()
    weight_norm = model.weight.norm().item()
    print(f"rank {xr.global_ordinal()} of {world} accuracy={accuracy:.6f} gathered={len(all_pred)} weights={weight_norm:.6f}", flush=True)


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=(int(sys.argv[1]) if len(sys.argv) > 1 else 3,))
