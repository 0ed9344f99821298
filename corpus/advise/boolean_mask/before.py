# advise-expect: eager_dispatch
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to("tpu")
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
x = torch.randn(6, 32, 16, device="tpu")
y = torch.randint(0, 4, (6, 32), device="tpu")
keep = torch.rand(6, 32, device="tpu") > 0.3  # padding positions are False
for step in range(6):
    per_token = torch.nn.functional.cross_entropy(model(x[step]), y[step], reduction="none")
    loss = per_token[keep[step]].mean()  # advise: dynamic_shape
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.4f}")
