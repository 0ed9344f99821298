"""xm.set_rng_state / xm.get_rng_state vs torch.manual_seed."""
import torch
import torch_xla
import torch_xla.core.xla_model as xm
from _probe import check, note

dev = torch_xla.device()


def draw(n=3):
    return [round(v, 6) for v in torch.rand(n, device=dev).cpu().tolist()]


check("xm.get_rng_state() initial", xm.get_rng_state)
first = draw()
note("torch.rand on xla (fresh process)", first)
check("xm.get_rng_state() after one draw", xm.get_rng_state)
check("xm.set_rng_state(42)", xm.set_rng_state, 42)
check("xm.get_rng_state() after set 42", xm.get_rng_state)
a = draw()
xm.set_rng_state(42)
b = draw()
note("set_rng_state(42) reproducible", a == b)
note("  draw after set_rng_state(42)", a)
torch.manual_seed(42)
c = draw()
note("torch.manual_seed(42) then xla draw", c)
note("  equals set_rng_state(42) draw", c == a)
check("xm.get_rng_state() after torch.manual_seed(42)+draw", xm.get_rng_state)
torch.manual_seed(42)
check("xm.get_rng_state() right after torch.manual_seed(42)", xm.get_rng_state)
torch.manual_seed(42)
cpu_draw = [round(v, 6) for v in torch.rand(3).tolist()]
note("CPU torch.rand after manual_seed(42)", cpu_draw)
note("  XLA draw equals CPU draw", cpu_draw == c)
check("torch_xla.manual_seed(42)", torch_xla.manual_seed, 42)
d = draw()
note("draw after torch_xla.manual_seed(42)", d)
note("  equals set_rng_state(42) draw", d == a)
xm.set_rng_state(42)
check("xm.get_rng_state() after set_rng_state(42)", xm.get_rng_state)
torch.manual_seed(7)
cpu1 = torch.rand(2).tolist()
xm.set_rng_state(7)
torch.manual_seed(7)
cpu2 = torch.rand(2).tolist()
note("set_rng_state leaves CPU generator alone", cpu1 == cpu2)
# Dropout / randn on device
xm.set_rng_state(1)
r1 = torch.randn(2, device=dev).cpu().tolist()
xm.set_rng_state(1)
r2 = torch.randn(2, device=dev).cpu().tolist()
note("randn reproducible via set_rng_state", r1 == r2)
check("xm.set_rng_state(2**40) (large seed)", xm.set_rng_state, 2 ** 40)
check("xm.get_rng_state() after large seed", xm.get_rng_state)
