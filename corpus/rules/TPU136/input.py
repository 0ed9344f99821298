# TPU136 rate-tracker: the class is defined in the file; a reference that is not a call is left
import torch_xla.core.xla_model as xm

tracker = xm.RateTracker(smooth_factor=0.2)
for step in range(3):
    tracker.add(16)
print(f"rate={tracker.rate():.1f} global={tracker.global_rate():.1f}")
assert isinstance(tracker, xm.RateTracker)
