"""torch.compile(backend="openxla") and torch_xla.compile(fn)."""
import time
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
from _probe import check, note

dev = torch_xla.device()
torch.manual_seed(0)
m_cpu = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
x_cpu = torch.arange(8.0).reshape(2, 4) / 8
ref = m_cpu(x_cpu).detach()
m = m_cpu.to(dev)
x = x_cpu.to(dev)


def compiled_forward():
    cm = torch.compile(m, backend="openxla")
    t = time.time()
    y = cm(x)
    y2 = cm(x)  # second call: cached graph
    return [round(v, 6) for v in y.cpu().flatten().tolist()], round(time.time() - t, 2)


r = check("torch.compile(model, backend='openxla')(x)", compiled_forward)
if r:
    note("  equal to CPU eager (atol 1e-6)", torch.allclose(torch.tensor(r[0]), ref.flatten(), atol=1e-6))
check("'openxla' in torch._dynamo.list_backends()", lambda: "openxla" in torch._dynamo.list_backends())
check("torch.compile(backend='openxla_eval')", lambda: torch.compile(m, backend="openxla_eval")(x).shape)


def compiled_train():
    torch.manual_seed(0)
    mm = nn.Linear(4, 2).to(dev)
    opt = torch.optim.SGD(mm.parameters(), lr=0.1)
    cm = torch.compile(mm, backend="openxla")
    out = []
    for _ in range(3):
        opt.zero_grad()
        loss = cm(x).pow(2).mean()
        loss.backward()
        opt.step()
        torch_xla.sync()
        out.append(round(loss.item(), 6))
    return out


check("torch.compile(openxla) 3 training steps losses", compiled_train)


def txla_compile():
    def f(a, b):
        return (a @ b).relu().sum()
    cf = torch_xla.compile(f)
    a = torch.arange(4.0, device=dev).reshape(2, 2)
    return cf(a, a).cpu().item()


check("torch_xla.compile(fn)(a, b)", txla_compile)


def txla_compile_train():
    torch.manual_seed(0)
    mm = nn.Linear(4, 2).to(dev)
    opt = torch.optim.SGD(mm.parameters(), lr=0.1)

    def step(inp):
        opt.zero_grad()
        loss = mm(inp).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    cs = torch_xla.compile(step, full_graph=False, name="train_step")
    return [round(cs(x).item(), 6) for _ in range(3)]


check("torch_xla.compile(train_step) 3 losses", txla_compile_train)
check("torch_xla.compile as decorator", lambda: torch_xla.compile(lambda: torch.ones(2, device=dev) * 3)().cpu().tolist())
