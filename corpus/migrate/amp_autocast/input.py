# bf16 mixed precision on TPU with torch_xla.amp
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
from torch_xla.amp import autocast, syncfree

device = xm.xla_device()
model = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 512)).to(device)
optimizer = syncfree.AdamW(model.parameters(), lr=1e-4)

for step in range(100):
    x = torch.randn(64, 512, device=device)
    optimizer.zero_grad()
    with autocast(device, dtype=torch.bfloat16):
        loss = (model(x) - x).pow(2).mean()
    loss.backward()
    optimizer.step()
    xm.mark_step()

with torch_xla.amp.autocast(xm.xla_device()):
    preds = model(torch.randn(8, 512, device=device))
print(preds.dtype)
