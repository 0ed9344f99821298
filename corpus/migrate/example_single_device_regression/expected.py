# Simplest possible torch_xla script: one device, a small MLP fitting y = f(x) on random data.
import torch
import torch.distributed as dist
import torch.nn as nn


def torchtpu_save(data, path):
    """`torch.save` of `data` with its tensors on the CPU (loads without a chip)."""
    cpu = torch.utils._pytree.tree_map_only(torch.Tensor, torch.Tensor.cpu, data)
    torch.save(cpu, path)


device = torch.device("tpu:0")

# synthetic regression data (made on the CPU so every run sees the same numbers)
torch.manual_seed(42)
X = torch.randn(64, 10)
true_w = torch.randn(10, 1)
Y = X @ true_w + 0.1 * torch.randn(64, 1)

model = nn.Sequential(
    nn.Linear(10, 32),
    nn.Tanh(),
    nn.Linear(32, 1),
).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.MSELoss()

X, Y = X.to(device), Y.to(device)

for i in range(4):
    optimizer.zero_grad()
    pred = model(X)
    loss = loss_fn(pred, Y)
    loss.backward()
    optimizer.step()
    print(f"step {i} loss={loss.item():.6f}")

# handy while debugging compilations; not printed here
report = "no XLA metrics on TorchTPU: profile with torch.profiler"

if dist.get_node_local_rank(fallback_rank=0) == 0:
    torchtpu_save(model.state_dict(), "model.pt")
if dist.is_initialized():
    dist.barrier()
print("saved model.pt")
