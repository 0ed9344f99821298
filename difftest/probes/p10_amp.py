"""Autocast and syncfree optimizers on the XLA CPU device."""
import torch
import torch.nn as nn
import torch_xla
import torch_xla.amp
from torch_xla.amp import syncfree
from _probe import check, note

dev = torch_xla.device()
torch.manual_seed(0)
lin = nn.Linear(4, 4).to(dev)
x = torch.randn(2, 4).to(dev)


def under(ctx_factory):
    with ctx_factory():
        y = lin(x)
        z = torch.relu(y).sum()
    return str(y.dtype), str(z.dtype)


check("torch_xla.amp.autocast(dev) -> (linear dtype, sum dtype)", under, lambda: torch_xla.amp.autocast(dev))
check("torch_xla.amp.autocast(dev, dtype=bfloat16)", under, lambda: torch_xla.amp.autocast(dev, dtype=torch.bfloat16))
check("torch_xla.amp.autocast(dev, enabled=False)", under, lambda: torch_xla.amp.autocast(dev, enabled=False))
check("torch.autocast('xla', dtype=bfloat16)", under, lambda: torch.autocast("xla", dtype=torch.bfloat16))
check("torch.autocast('xla') default dtype", under, lambda: torch.autocast("xla"))
check("torch.autocast('xla', dtype=float16)", under, lambda: torch.autocast("xla", dtype=torch.float16))
check("torch.get_autocast_dtype('xla')", torch.get_autocast_dtype, "xla")


def syncfree_run(cls, **kw):
    torch.manual_seed(0)
    m = nn.Linear(4, 2).to(dev)
    opt = cls(m.parameters(), lr=0.01, **kw)
    out = []
    for _ in range(3):
        opt.zero_grad()
        loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()
        torch_xla.sync()
        out.append(round(loss.item(), 6))
    return out


a = check("syncfree.AdamW 3 losses", syncfree_run, syncfree.AdamW)
b = check("torch.optim.AdamW 3 losses (same init)", syncfree_run, torch.optim.AdamW)
note("  syncfree.AdamW == torch.optim.AdamW", a == b)
check("syncfree.Adam", syncfree_run, syncfree.Adam)
check("syncfree.SGD(momentum=0.9)", syncfree_run, syncfree.SGD, momentum=0.9)


def bf16_training():
    torch.manual_seed(0)
    m = nn.Linear(4, 2).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    out = []
    for _ in range(2):
        opt.zero_grad()
        with torch_xla.amp.autocast(dev):
            loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()
        torch_xla.sync()
        out.append((str(loss.dtype), round(loss.float().item(), 6)))
    return out


check("training step under torch_xla.amp.autocast(dev)", bf16_training)
check("torch_xla.amp.autocast(dev) object creation only (no `with`)", lambda: type(torch_xla.amp.autocast(dev)).__name__)
