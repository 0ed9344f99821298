# Simplest possible torch_xla script: one device, a small MLP fitting y = f(x) on random data.
import torch
import torch.nn as nn

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met

device = xm.xla_device()

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
    xm.mark_step()  # cut the graph and run it
    print(f"step {i} loss={loss.item():.6f}")

# handy while debugging compilations; not printed here
report = met.metrics_report()

xm.save(model.state_dict(), "model.pt")
print("saved model.pt")
