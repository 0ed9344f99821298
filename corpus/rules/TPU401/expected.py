# TPU401 xla-metrics: reports, name lists and printed counters are converted, clearing is deleted, a counter tested is reported
import logging

import torch_xla.debug.metrics as met

print("no XLA metrics on TorchTPU: profile with torch.profiler")
print("no XLA metrics on TorchTPU: profile with torch.profiler")
names = []
print(f"compiles={None}")
logging.info("compile time: %s", None)
assert met.counter_value("CompileTime") > 0
