# bf16 mixed precision on TPU with torch_xla.amp
import torch
import torch.nn as nn

device = torch.device("tpu")
model = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 512)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

for step in range(100):
    x = torch.randn(64, 512, device=device)
    optimizer.zero_grad()
    with torch.autocast("tpu", dtype=torch.bfloat16):
        loss = (model(x) - x).pow(2).mean()
    loss.backward()
    optimizer.step()

with torch.autocast("tpu", dtype=torch.bfloat16):
    preds = model(torch.randn(8, 512, device=device))
print(preds.dtype)
