"""torch_xla FSDP (XlaFullyShardedDataParallel) in a single process, no spawn."""
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP
from _probe import check, note

dev = torch_xla.device()
x_cpu = torch.arange(8.0).reshape(2, 4) / 8


def make():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def train(model, device, steps=3):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = x_cpu.to(device)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        torch_xla.sync()
        out.append(round(loss.item(), 6))
    return out


fm = check("FSDP(model.to(dev))", lambda: FSDP(make().to(dev)))
if fm is not None:
    check("  flat param shapes", lambda: [tuple(p.shape) for p in fm.parameters()])
    fl = check("  FSDP 3-step losses", train, fm, dev)
    rl = train(make(), torch.device("cpu"))
    note("  plain CPU losses", rl)
    note("  FSDP == CPU (exact)", fl == rl)
    check("  fm.state_dict() keys (first 4)", lambda: list(fm.state_dict().keys())[:4])
    check("  fm.get_shard_metadata() keys", lambda: sorted(fm.get_shard_metadata().keys()))
fm2 = check("FSDP(cpu model) (module not moved to dev first)", lambda: FSDP(make()))
if fm2 is not None:
    check("  param device", lambda: str(next(fm2.parameters()).device))
