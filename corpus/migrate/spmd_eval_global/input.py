# Issue 43, item 9: an SPMD model whose loss is printed before `backward`, then evaluated on a
# sharded batch. torch_xla computed every printed number over the global batch.
import numpy as np
import torch
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

xr.use_spmd()
device = xm.xla_device()
num_devices = xr.global_runtime_device_count()
mesh = xs.Mesh(np.arange(num_devices), (num_devices,), ("data",))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
gen = torch.Generator().manual_seed(1)
data, labels = torch.randn(64, 8, generator=gen), torch.randint(0, 3, (64,), generator=gen)
for step in range(3):
    x, y = data[step * 16:(step + 1) * 16].to(device), labels[step * 16:(step + 1) * 16].to(device)
    xs.mark_sharding(x, mesh, ("data", None))
    xs.mark_sharding(y, mesh, ("data",))
    loss = F.cross_entropy(model(x), y)
    print(f"step {step} loss {loss.item():.6f}")
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    xm.mark_step()

model.eval()
x, y = data[48:].to(device), labels[48:].to(device)
xs.mark_sharding(x, mesh, ("data", None))
xs.mark_sharding(y, mesh, ("data",))
with torch.no_grad():
    logits = model(x)
    eval_loss = F.cross_entropy(logits, y)
    accuracy = (logits.argmax(dim=1) == y).float().mean()
print(f"eval loss {eval_loss.item():.6f} accuracy {accuracy.item():.4f} on {y.shape[0]} samples")
