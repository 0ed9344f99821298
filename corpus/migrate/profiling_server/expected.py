import time

import torch
import torch_xla.debug.metrics as met
import torch_xla.debug.profiler as xp

server = xp.start_server(9012)  # capture with tensorboard's profile plugin
device = torch.device("tpu")
model = torch.nn.Linear(1024, 1024).to(device)

for step in range(30):
    with xp.StepTrace("train_step", step_num=step):
        with torch.profiler.record_function("forward"):
            y = model(torch.randn(128, 1024, device=device))
        with torch.profiler.record_function("backward"):
            y.sum().backward()
    if step == 10:
        xp.trace_detached("localhost:9012", "/tmp/profile", duration_ms=5000)

torch.accelerator.synchronize()
print(met.short_metrics_report())
print(met.metrics_report())
