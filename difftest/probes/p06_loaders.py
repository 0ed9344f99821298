"""pl.MpDeviceLoader and pl.ParallelLoader(...).per_device_loader in one process."""
import torch
from torch.utils.data import DataLoader, TensorDataset
import torch_xla
import torch_xla.distributed.parallel_loader as pl
from _probe import check, note

dev = torch_xla.device()
ds = TensorDataset(torch.arange(10.0).reshape(5, 2), torch.arange(5))
loader = DataLoader(ds, batch_size=2, shuffle=False)


def summarize(it):
    out = []
    for x, y in it:
        out.append((str(x.device), list(x.shape), x.cpu().tolist(), y.cpu().tolist()))
    return out


check("len(MpDeviceLoader)", lambda: len(pl.MpDeviceLoader(loader, dev)))
check("pl.MpDeviceLoader(loader, dev) batches", lambda: summarize(pl.MpDeviceLoader(loader, dev)))
check("pl.MpDeviceLoader iterated twice (epochs)", lambda: [len(summarize(ml)) for ml in [pl.MpDeviceLoader(loader, dev)] for _ in range(2)])
check("pl.ParallelLoader(loader, [dev]).per_device_loader(dev)", lambda: summarize(pl.ParallelLoader(loader, [dev]).per_device_loader(dev)))
check("len(per_device_loader)", lambda: len(pl.ParallelLoader(loader, [dev]).per_device_loader(dev)))
check("MpDeviceLoader(loader, dev, batches_per_execution=2)", lambda: len(summarize(pl.MpDeviceLoader(loader, dev, batches_per_execution=2))))
# dict batches
dl2 = DataLoader([{"a": torch.tensor([float(i)])} for i in range(3)], batch_size=2)
check("MpDeviceLoader with dict batches", lambda: [(k, str(v.device), v.cpu().tolist()) for b in pl.MpDeviceLoader(dl2, dev) for k, v in b.items()])
# Does iteration insert a graph cut (mark_step) between batches?
import torch_xla.debug.metrics as met
acc = torch.zeros(2, device=dev)
torch_xla.sync()
met.clear_all()
for x, _ in pl.MpDeviceLoader(loader, dev):
    acc = acc + x.sum(0)
note("graph executions during 3-batch MpDeviceLoader loop w/o explicit sync", met.counter_value("ExecuteComputation"))
note("acc", acc.cpu().tolist())
acc2 = torch.zeros(2, device=dev)
torch_xla.sync()
met.clear_all()
for x, _ in loader:
    acc2 = acc2 + x.to(dev).sum(0)
note("graph executions during same loop over plain DataLoader + .to(dev)", met.counter_value("ExecuteComputation"))
import torch_xla.core.xla_model as xm
ran = []
for i, (x, _) in enumerate(pl.MpDeviceLoader(loader, dev)):
    xm.add_step_closure(lambda i=i: ran.append(i))
    note(f"  closures run when batch {i} is handed out", list(ran))
note("closures run after the MpDeviceLoader loop ended", list(ran))
