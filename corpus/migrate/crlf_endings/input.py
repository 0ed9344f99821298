import torch
import torch_xla.core.xla_model as xm

# Windows-edited script: CRLF line endings
device = xm.xla_device()


def train_step(model, batch, optimizer):
    optimizer.zero_grad()
    loss = model(batch.to(device)).mean()
    loss.backward()
    optimizer.step()
    xm.mark_step()
    return loss


torch.manual_seed(0)
model = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(5):
    print(f"{train_step(model, torch.randn(8, 4), opt).item():.6f}")
