"""Graph cut / sync APIs, step closures, metrics, wait_device_ops."""
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
from _probe import check, note

dev = torch_xla.device()
events = []
x = torch.ones(3, device=dev)
y = x * 2
check("xm.mark_step()", xm.mark_step)
check("xm.mark_step(wait=True)", xm.mark_step, wait=True)
check("torch_xla.sync()", torch_xla.sync)
check("torch_xla.sync(wait=True)", torch_xla.sync, wait=True)
check("y after sync", lambda: y.cpu().tolist())


def with_step():
    with torch_xla.step():
        z = torch.full((2,), 3.0, device=dev) + 1
    return z.cpu().tolist()


check("with torch_xla.step(): ...", with_step)

# add_step_closure: when does fn run?
w = torch.full((2,), 5.0, device=dev)
check("xm.add_step_closure(fn, args)", xm.add_step_closure, lambda a, b: events.append(("closure ran", a, b.cpu().tolist())), args=("tag", w))
note("events right after add_step_closure", repr(events))
_ = (w * 2).cpu()
note("events after .cpu() of another tensor", repr(events))
xm.mark_step()
note("events after xm.mark_step()", repr(events))
events.clear()
xm.add_step_closure(lambda: events.append("closure2"))
torch_xla.sync()
note("events after torch_xla.sync()", repr(events))
events.clear()
with torch_xla.step():
    xm.add_step_closure(lambda: events.append("closure3"))
    note("events inside step() block", repr(events))
note("events after leaving step() block", repr(events))
events.clear()
xm.add_step_closure(lambda: events.append("closure4"), run_async=True)
xm.mark_step()
xm.wait_device_ops()
note("events after run_async=True closure + mark_step + wait_device_ops", repr(events))
check("xm.wait_device_ops()", xm.wait_device_ops)
check("met.metric_names()[:8]", lambda: met.metric_names()[:8])
check("met.counter_names()[:8]", lambda: met.counter_names()[:8])
rep = check("met.metrics_report() type", lambda: type(met.metrics_report()).__name__)
r = met.metrics_report()
note("met.metrics_report() first 3 lines", repr(r.splitlines()[:3]))
note("met.metrics_report() length (lines)", len(r.splitlines()))
check("met.short_metrics_report()[:120]", lambda: met.short_metrics_report()[:120])
check("met.metric_data('CompileTime')[:1]", lambda: met.metric_data("CompileTime")[:1])
