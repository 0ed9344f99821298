# bf16 mixed precision on TPU with torch_xla.amp
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
from torch_xla.amp import autocast, syncfree

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 16)).to(device)
optimizer = syncfree.AdamW(model.parameters(), lr=1e-4)

for step in range(3):
    x = torch.randn(8, 16).to(device)
    optimizer.zero_grad()
    with autocast(device, dtype=torch.bfloat16):
        loss = (model(x) - x).pow(2).mean()
    loss.backward()
    optimizer.step()
    xm.mark_step()
    print(f"step {step} loss={loss.item():.4f} {loss.dtype}")

with torch_xla.amp.autocast(xm.xla_device()):
    preds = model(torch.randn(8, 16).to(device))
print(preds.dtype)
