"""Checkpoints written from branches only the master takes.

Issue 43, item 16: `if xm.is_master_ordinal(): xm.save(...)` became a save followed by
`dist.barrier()` inside the master's branch; the other ranks never reach that barrier, and the
two-chip run crashed (or hung). torch_xla 2.9's save waits for nobody.
"""
import sys

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


def _mp_fn(index, epochs):
    device = xm.xla_device()
    rank = xr.global_ordinal()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(epochs):
        x = torch.randn(8, 4, generator=g).to(device)
        loss = (model(x) - 1.0).abs().mean()
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        if xm.is_master_ordinal():
            xm.save({"epoch": epoch, "model": model.state_dict()}, "last.pt")
    if rank == 0:
        xm.save(model.state_dict(), "final.pt")
        print("saved final.pt", flush=True)
    total = sum(p.abs().sum() for p in model.parameters()).item()
    print(f"rank {rank} of {xr.world_size()} total={total:.6f}", flush=True)


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=(int(sys.argv[1]) if len(sys.argv) > 1 else 3,))
