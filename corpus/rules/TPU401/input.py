# TPU401 xla-metrics: reports and name lists are converted, a counter read or cleared is reported
import torch_xla.debug.metrics as met

print(met.metrics_report())
print(met.short_metrics_report())
met.clear_all()
names = met.counter_names()
assert met.counter_value("CompileTime") > 0
