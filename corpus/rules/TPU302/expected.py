# TPU302 syncfree-optimizer
import torch

params = [torch.nn.Parameter(torch.ones(2))]
a = torch.optim.AdamW(params, lr=1e-3)
b = torch.optim.SGD(params, lr=0.1, momentum=0.9)
c = torch.optim.Adam(params)
d = torch.optim.AdamW(params)  # already torch.optim: untouched
