# advise-expect: eager_dispatch
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(6)]).to("tpu")
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)  # foreach, torch's default on tpu
x = torch.randn(6, 32, 16, device="tpu")
for step in range(6):
    loss = model(x[step]).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.4f}")
