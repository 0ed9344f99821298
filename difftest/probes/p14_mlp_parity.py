"""Seeded tiny MLP: XLA CPU device vs plain CPU torch. Prints losses with 6 decimals,
max abs differences, and wall time of `import torch_xla` + 5 steps.
Usage: p14_mlp_parity.py [steps]"""
import sys, time
t0 = time.time()
import torch
t_torch = time.time()
import torch_xla
import torch_xla.core.xla_model as xm
t_xla = time.time()
import torch.nn as nn

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 5


def build():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))
    g = torch.Generator().manual_seed(1)
    data = torch.randn(STEPS, 8, 16, generator=g)
    target = torch.randint(0, 4, (STEPS, 8), generator=g)
    return model, data, target


def run(device, opt_name):
    model, data, target = build()
    model = model.to(device)
    if opt_name == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for i in range(STEPS):
        x, y = data[i].to(device), target[i].to(device)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if device.type == "xla":
            xm.mark_step()
        losses.append(loss.item())
    params = [p.detach().cpu() for p in model.parameters()]
    return losses, params


t_loop0 = time.time()
xla_losses, xla_params = run(torch_xla.device(), "sgd")
t_loop = time.time()
cpu_losses, cpu_params = run(torch.device("cpu"), "sgd")
print("RESULT xla  losses (SGD):", " ".join(f"{l:.6f}" for l in xla_losses))
print("RESULT cpu  losses (SGD):", " ".join(f"{l:.6f}" for l in cpu_losses))
print("RESULT losses equal at 6 decimals (SGD):", [f"{a:.6f}" for a in xla_losses] == [f"{b:.6f}" for b in cpu_losses])
print("RESULT max |loss diff| (SGD): %.3e" % max(abs(a - b) for a, b in zip(xla_losses, cpu_losses)))
print("RESULT max |param diff| (SGD): %.3e" % max((a - b).abs().max().item() for a, b in zip(xla_params, cpu_params)))
print("RESULT bitwise equal params (SGD):", all(torch.equal(a, b) for a, b in zip(xla_params, cpu_params)))
xa, pa = run(torch_xla.device(), "adam")
ca, pc = run(torch.device("cpu"), "adam")
print("RESULT xla  losses (Adam):", " ".join(f"{l:.6f}" for l in xa))
print("RESULT cpu  losses (Adam):", " ".join(f"{l:.6f}" for l in ca))
print("RESULT max |loss diff| (Adam): %.3e" % max(abs(a - b) for a, b in zip(xa, ca)))
print("RESULT max |param diff| (Adam): %.3e" % max((a - b).abs().max().item() for a, b in zip(pa, pc)))
# RNG on device differs from CPU: data generated ON the XLA device is not comparable.
torch.manual_seed(0)
dev_rand = torch.randn(3, device=torch_xla.device()).cpu()
torch.manual_seed(0)
cpu_rand = torch.randn(3)
print("RESULT torch.randn on xla == on cpu after same manual_seed:", torch.equal(dev_rand, cpu_rand))
print(f"RESULT timing: import torch {t_torch - t0:.2f}s, import torch_xla {t_xla - t_torch:.2f}s, "
      f"first {STEPS}-step XLA loop {t_loop - t_loop0:.2f}s, total to end of XLA loop {t_loop - t0:.2f}s")
