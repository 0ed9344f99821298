# Issue 43, item 9: an SPMD evaluation that reads what no rule can make global by itself: the
# mean prediction per class (a reduction along the batch's own dimension) and the first
# sample's logits. torch_xla printed the global batch's; split, each process would print its
# slice's. The reads are reported (TPU234), the split waits for them, and the migration stops
# at the torch_xla import it keeps.
import numpy as np
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

xr.use_spmd()
device = xm.xla_device()
n = xr.global_runtime_device_count()
mesh = xs.Mesh(np.arange(n), (n,), ("data",))
torch.manual_seed(0)
model = torch.nn.Linear(6, 3).to(device)
x = torch.randn(16, 6).to(device)
xs.mark_sharding(x, mesh, ("data", None))
with torch.no_grad():
    probs = model(x).softmax(dim=-1)
print("mean per class", [round(p, 4) for p in probs.mean(dim=0).tolist()])
print("first sample", [round(p, 4) for p in probs[0].tolist()])
