# TPU116 xla-utils: reported only
import torch_xla.utils.utils as xu
from torch_xla.utils.dlpack import to_dlpack

steps = xu.getenv_as("STEPS", int, 10)
capsule = to_dlpack(t)
