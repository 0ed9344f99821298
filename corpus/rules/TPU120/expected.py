# TPU120 xla-compile
import torch
import torch_xla


def f(x):
    return torch.sin(x) + 1


g = torch.compile(f, backend="tpu")
h = torch.compile(f, backend="tpu")
k = torch.compile(f, backend="tpu")  # the name only labelled debug output

with torch_xla.compile():  # context-manager form: reported
    y = f(torch.ones(2))
