"""A training step compiled whole with torch_xla.compile(full_graph=True) (torch_xla 2.6+ style)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("tpu:0")
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

inputs = torch.randn(8, 16)
labels = torch.randint(0, 4, (8,))


def train_step(x, y):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


# full_graph=True: fail if the step would need more than one graph
step = torch.compile(train_step, backend="tpu")
for i in range(4):
    loss = step(inputs.to(device), labels.to(device))
    print(f"step {i} loss={loss.item():.6f}")
print(f"checksum={sum(p.norm().item() for p in model.parameters()):.6f}")
