# TPU401 xla-metrics: reports, name lists and printed counters are converted, clearing is deleted, a counter tested is reported
import logging

import torch_xla.debug.metrics as met

print(met.metrics_report())
print(met.short_metrics_report())
met.clear_all()
names = met.counter_names()
print(f"compiles={met.counter_value('UncachedCompile')}")
logging.info("compile time: %s", met.metric_data("CompileTime"))
assert met.counter_value("CompileTime") > 0
