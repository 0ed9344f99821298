# TPU403 xla-trace-annotation
import torch_xla.debug.profiler as xp
import torch

with torch.profiler.record_function("forward"):
    pass
with xp.Trace("step", _annotate=True):  # extra keyword: reported
    pass
with xp.StepTrace("train", step_num=1):  # step trace: reported
    pass
