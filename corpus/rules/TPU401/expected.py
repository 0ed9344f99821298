# TPU401 xla-metrics: reports and name lists are converted, a counter read or cleared is reported
import torch_xla.debug.metrics as met

print("no XLA metrics on TorchTPU: profile with torch.profiler")
print("no XLA metrics on TorchTPU: profile with torch.profiler")
met.clear_all()
names = []
assert met.counter_value("CompileTime") > 0
