# TPU302 syncfree-optimizer
import torch
from torch_xla.amp import syncfree
import torch_xla.amp.syncfree as sf

params = [torch.nn.Parameter(torch.ones(2))]
a = syncfree.AdamW(params, lr=1e-3)
b = sf.SGD(params, lr=0.1, momentum=0.9)
c = syncfree.Adam(params)
d = torch.optim.AdamW(params)  # already torch.optim: untouched
