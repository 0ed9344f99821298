# TPU136 rate-tracker: the class is defined in the file; a reference that is not a call is left
import os
import time
import torch_xla.core.xla_model as xm


class RateTracker:
    """Samples per second: `rate()` since its last call (smoothed), `global_rate()` overall.

    What torch_xla's `xm.RateTracker` measured; it only reads the clock.
    """

    def __init__(self, smooth_factor=None):
        if smooth_factor is None:
            smooth_factor = float(os.environ.get("RATE_TRACKER_SMOOTHING", 0.4))
        self._smooth_factor = smooth_factor
        self._start_time = self._partial_time = time.time()
        self._partial_count = self._count = 0.0
        self._partial_rate = None

    def add(self, count):
        self._count += count

    def rate(self):
        now = time.time()
        elapsed = now - self._partial_time
        if elapsed <= 0:
            return 0.0
        rate = self._count / elapsed
        if self._partial_rate is not None:
            rate = (1 - self._smooth_factor) * rate + self._smooth_factor * self._partial_rate
        self._partial_count += self._count
        self._count, self._partial_time, self._partial_rate = 0.0, now, rate
        return rate

    def global_rate(self):
        elapsed = time.time() - self._start_time
        return (self._partial_count + self._count) / elapsed if elapsed > 0 else 0.0


tracker = RateTracker(smooth_factor=0.2)
for step in range(3):
    tracker.add(16)
print(f"rate={tracker.rate():.1f} global={tracker.global_rate():.1f}")
assert isinstance(tracker, xm.RateTracker)
