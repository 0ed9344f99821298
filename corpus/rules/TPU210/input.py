# TPU210 optimizer-step
import torch
import torch_xla.core.xla_model as xm
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(torch.nn.Linear(2, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
xm.optimizer_step(opt)
xm.optimizer_step(opt, barrier=True)
xm.optimizer_step(opt, optimizer_args={"closure": None})  # extra args: reported
