# TPU116 xla-utils: reported only
import torch_xla.utils.utils as xu
import torch_xla.core.xla_model as xm
from torch_xla.utils.dlpack import to_dlpack

steps = xu.getenv_as("STEPS", int, 10)
tracker = xm.RateTracker()
capsule = to_dlpack(t)
