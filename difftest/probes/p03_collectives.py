"""Collectives and rendezvous in a single process (world size 1, no spawn)."""
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
from _probe import check, note

dev = torch_xla.device()
check("xm.rendezvous('x')", xm.rendezvous, "x")
check("xm.rendezvous('x', b'payload')", xm.rendezvous, "x", b"payload")
check("xm.mesh_reduce('t', 1.0, sum)", xm.mesh_reduce, "t", 1.0, sum)
check("xm.mesh_reduce('t', 2.5, max)", xm.mesh_reduce, "t", 2.5, max)
check("xm.mesh_reduce('t', [1,2], lambda l: l)", xm.mesh_reduce, "t", [1, 2], lambda l: l)

t = torch.tensor([1.0, 2.0, 3.0], device=dev)
import os
note("env XLA_ALWAYS_ALLREDUCE", repr(os.environ.get("XLA_ALWAYS_ALLREDUCE")))
out = check("xm.all_reduce(REDUCE_SUM, t) returns", lambda: xm.all_reduce(xm.REDUCE_SUM, t).cpu().tolist())
check("  returned tensor is t (same object)?", lambda: xm.all_reduce(xm.REDUCE_SUM, t) is t)
check("  t after (unchanged?)", lambda: t.cpu().tolist())
check("xm.all_reduce(REDUCE_SUM, t, scale=0.5)", lambda: xm.all_reduce(xm.REDUCE_SUM, t, scale=0.5).cpu().tolist())
check("xm.all_reduce(REDUCE_MAX, t)", lambda: xm.all_reduce(xm.REDUCE_MAX, t).cpu().tolist())
a = torch.tensor([1.0, 2.0], device=dev)
b = torch.tensor([[3.0]], device=dev)


def list_reduce():
    lst = [a, b]
    r = xm.all_reduce(xm.REDUCE_SUM, lst)
    return type(r).__name__ + (" (same list object)" if r is lst else " (new)"), a.cpu().tolist(), b.cpu().tolist(), (r if r is None else [x.cpu().tolist() for x in r])


check("xm.all_reduce(REDUCE_SUM, [a, b]) -> (ret type, a, b, ret)", list_reduce)


def list_reduce_scaled():
    a2 = torch.tensor([1.0, 2.0], device=dev)
    xm.all_reduce(xm.REDUCE_SUM, [a2], scale=0.5)
    return a2.cpu().tolist()


check("xm.all_reduce(REDUCE_SUM, [a2], scale=0.5) in place -> a2", list_reduce_scaled)
g = torch.arange(6.0, device=dev).reshape(2, 3)
check("xm.all_gather(t) (dim 0)", lambda: (lambda r: (list(r.shape), r.cpu().tolist()))(xm.all_gather(g)))
check("xm.all_gather(t, dim=1)", lambda: (lambda r: list(r.shape))(xm.all_gather(g, dim=1)))
check("xm.all_gather(scalar 0-d)", lambda: (lambda r: list(r.shape))(xm.all_gather(torch.tensor(7.0, device=dev))))
check("xm.reduce_scatter(SUM, t, 1.0, 0, 1)", lambda: xm.reduce_scatter(xm.REDUCE_SUM, g, 1.0, 0, 1).cpu().tolist())
check("xm.all_to_all(t, 0, 0, 1)", lambda: xm.all_to_all(g, 0, 0, 1).cpu().tolist())
check("xm.collective_broadcast([t])", lambda: (xm.collective_broadcast([g]), g.cpu().tolist())[1])

torch.manual_seed(0)
m = nn.Linear(3, 2).to(dev)
before = [p.detach().cpu().clone() for p in m.parameters()]
check("xm.broadcast_master_param(model)", xm.broadcast_master_param, m)
after = [p.detach().cpu() for p in m.parameters()]
note("  params unchanged after broadcast_master_param", all(torch.equal(x, y) for x, y in zip(before, after)))
check("xm.reduce_gradients(opt) (no grads yet)", lambda: xm.reduce_gradients(torch.optim.SGD(m.parameters(), lr=0.1)))
