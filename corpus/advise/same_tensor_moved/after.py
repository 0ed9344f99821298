# advise-expect: eager_dispatch
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to("tpu")
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
x = torch.randn(256, 16)
y = torch.randint(0, 4, (256,))
x_tpu, y_tpu = x.to("tpu"), y.to("tpu")  # once, before the loop
for step in range(6):
    loss = torch.nn.functional.cross_entropy(model(x_tpu), y_tpu)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.4f}")
