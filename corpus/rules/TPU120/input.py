# TPU120 xla-compile
import torch
import torch_xla


def f(x):
    return torch.sin(x) + 1


g = torch_xla.compile(f)
h = torch_xla.compile(f, full_graph=True)
k = torch_xla.compile(f, name="train_step")  # the name only labelled debug output

with torch_xla.compile():  # context-manager form: reported
    y = f(torch.ones(2))
