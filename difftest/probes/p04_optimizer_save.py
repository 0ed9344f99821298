"""xm.optimizer_step in one process; xm.save output format."""
import os, pickle, tempfile, zipfile
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
from _probe import check, note

dev = torch_xla.device()


def run(step_fn, **kw):
    torch.manual_seed(0)
    m = nn.Linear(4, 2).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    x = torch.arange(8.0).reshape(2, 4).to(dev)
    m(x).sum().backward()
    ret = step_fn(opt, **kw)
    xm.mark_step()
    return ret, [p.detach().cpu() for p in m.parameters()]


r_plain, p_plain = run(lambda o: o.step())
r_xm, p_xm = check("xm.optimizer_step(opt) return/params", lambda: run(xm.optimizer_step)) or (None, None)
if p_xm is not None:
    note("  params identical to opt.step()", all(torch.equal(a, b) for a, b in zip(p_plain, p_xm)))
    note("  return value", repr(r_xm))
r_b, p_b = check("xm.optimizer_step(opt, barrier=True)", lambda: run(xm.optimizer_step, barrier=True)) or (None, None)
if p_b is not None:
    note("  params identical to opt.step()", all(torch.equal(a, b) for a, b in zip(p_plain, p_b)))
check("xm.optimizer_step(opt, optimizer_args={'closure': None})", lambda: run(xm.optimizer_step, optimizer_args={})[0])

# xm.save: what does it write?
torch.manual_seed(0)
m = nn.Linear(4, 2).to(dev)
sd = {"model": m.state_dict(), "step": 3, "t": torch.ones(2, device=dev), "nested": [torch.zeros(1, device=dev)]}
d = tempfile.mkdtemp()
path = os.path.join(d, "ckpt.pt")
check("xm.save(state_dict, path)", xm.save, sd, path)
note("  file exists / size>0", (os.path.exists(path), os.path.getsize(path) > 0 if os.path.exists(path) else None))
note("  is torch zip format", zipfile.is_zipfile(path))
loaded = torch.load(path)
note("  torch.load keys", sorted(loaded))
note("  weight device after torch.load", str(loaded["model"]["weight"].device))
note("  't' device / nested device", (str(loaded["t"].device), str(loaded["nested"][0].device)))
note("  step", loaded["step"])
note("  weights equal to model's", torch.equal(loaded["model"]["weight"], m.weight.detach().cpu()))
path2 = os.path.join(d, "ckpt_master_only_false.pt")
check("xm.save(sd, path, master_only=False)", xm.save, sd, path2)
check("xm.save(sd, path, global_master=True)", xm.save, sd, os.path.join(d, "g.pt"), global_master=True)
check("torch.save(xla state_dict) directly", lambda: (torch.save(m.state_dict(), os.path.join(d, "direct.pt")), str(torch.load(os.path.join(d, "direct.pt"))["weight"].device))[1])
check("torch.load(path, map_location=xla dev)", lambda: str(torch.load(path, map_location=dev)["model"]["weight"].device))
