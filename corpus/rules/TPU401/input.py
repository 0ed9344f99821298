# TPU401 xla-metrics: reported only
import torch_xla.debug.metrics as met

print(met.metrics_report())
print(met.short_metrics_report())
met.clear_all()
