"""Wall time of `import torch_xla` + a 5-step tiny MLP on the XLA CPU device, nothing else.
run_probes.sh also reports the whole process wall time (interpreter start/exit included)."""
import time
t0 = time.time()
import torch
import torch_xla
t1 = time.time()
import torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
x, y = torch.randn(5, 8, 16), torch.randint(0, 4, (5, 8))
dev = torch_xla.device()
model = model.to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(5):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x[i].to(dev)), y[i].to(dev))
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(f"step {i} loss {loss.item():.6f}")
t2 = time.time()
print(f"RESULT timing: import torch+torch_xla {t1 - t0:.2f}s, 5 steps {t2 - t1:.2f}s, total {t2 - t0:.2f}s")
