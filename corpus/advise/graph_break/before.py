import torch

torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 32)
        self.b = torch.nn.Linear(32, 4)

    def forward(self, x):
        h = self.a(x).relu()
        if h.mean() > 0.5:  # advise: graph_break, host_sync
            h = h * 0.5
        return self.b(h)


model = Net().to("tpu")
step_model = torch.compile(model, backend="tpu")
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
x = torch.randn(6, 32, 16, device="tpu")
y = torch.randint(0, 4, (6, 32), device="tpu")
for step in range(6):
    loss = torch.nn.functional.cross_entropy(step_model(x[step]), y[step])
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.4f}")
