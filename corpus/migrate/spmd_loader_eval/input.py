# Issue 43, item 9: SPMD data parallelism through the device loader's `input_sharding`
# (pytorch/xla's ResNet SPMD example's shape), with an evaluation over a sharded loader that
# counts correct predictions and samples and averages the loss of each batch. torch_xla read
# every number over the global batch.
import numpy as np
import torch
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

xr.use_spmd()
device = xm.xla_device()
n = xr.global_runtime_device_count()
mesh = xs.Mesh(np.arange(n), (n, 1), ("data", "model"))
torch.manual_seed(0)
features, labels = torch.randn(96, 10), torch.randint(0, 4, (96,))
dataset = torch.utils.data.TensorDataset(features, labels)
train = torch.utils.data.DataLoader(torch.utils.data.Subset(dataset, range(64)), batch_size=16)
test = torch.utils.data.DataLoader(torch.utils.data.Subset(dataset, range(64, 96)), batch_size=8)
sharding = xs.ShardingSpec(mesh, ("data", None))
model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.3)

for epoch in range(2):
    model.train()
    for x, y in pl.MpDeviceLoader(train, device, input_sharding=sharding):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} last loss {loss.item():.6f}")

model.eval()
correct, seen, losses = 0, 0, []
with torch.no_grad():
    for x, y in pl.MpDeviceLoader(test, device, input_sharding=sharding):
        logits = model(x)
        losses.append(F.cross_entropy(logits, y).item())
        correct += (logits.argmax(dim=1) == y).sum().item()
        seen += y.size(0)
print(f"eval accuracy {correct}/{seen} mean batch loss {sum(losses) / len(losses):.6f}")
