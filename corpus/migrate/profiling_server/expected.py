import time

import torch
import torch_xla.debug.profiler as xp

server = xp.start_server(9012)  # capture with tensorboard's profile plugin
torch.manual_seed(0)
device = torch.device("tpu:0")
model = torch.nn.Linear(64, 64).to(device)

for step in range(4):
    with xp.StepTrace("train_step", step_num=step):
        with torch.profiler.record_function("forward"):
            y = model(torch.randn(8, 64).to(device))
        with torch.profiler.record_function("backward"):
            y.sum().backward()
    if step == 1:
        xp.trace_detached("localhost:9012", "profile", duration_ms=500)

torch.accelerator.synchronize()
print("no XLA metrics on TorchTPU: profile with torch.profiler")
print("no XLA metrics on TorchTPU: profile with torch.profiler")
