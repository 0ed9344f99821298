import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))

    def forward(self, x):  # advise: recompile
        return self.body(x)


model = Net().to("tpu")
step_model = torch.compile(model, backend="tpu")
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
data = TensorDataset(torch.randn(60, 16), torch.randint(0, 4, (60,)))
loader = DataLoader(data, batch_size=16)  # 16, 16, 16, then 12
for xb, yb in loader:
    loss = torch.nn.functional.cross_entropy(step_model(xb.to("tpu")), yb.to("tpu"))
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.4f}")
