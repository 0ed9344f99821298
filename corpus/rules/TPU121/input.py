# TPU121 openxla-backend
import torch

m = torch.nn.Linear(2, 2)
a = torch.compile(m, backend="openxla")
b = torch.compile(m, backend="openxla_eval")
c = torch.compile(m, backend="inductor")  # not XLA: untouched
d = torch.compile(m)  # untouched


@torch.compile  # a reference shows no backend: untouched
def step(x):
    return x * 2


compile_fn = torch.compile  # untouched: the call it is used in is judged, not the name
