# bf16 mixed precision on TPU with torch_xla.amp
import torch
import torch.nn as nn

device = torch.device("tpu:0")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 16)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

for step in range(3):
    x = torch.randn(8, 16).to(device)
    optimizer.zero_grad()
    with torch.autocast("tpu", dtype=torch.bfloat16):
        loss = (model(x) - x).pow(2).mean()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss={loss.item():.4f} {loss.dtype}")

with torch.autocast("tpu", dtype=torch.bfloat16):
    preds = model(torch.randn(8, 16).to(device))
print(preds.dtype)
