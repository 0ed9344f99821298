# TPU106 rng-seed
import torch_xla.core.xla_model as xm
import torch

torch.tpu.manual_seed(1234)
torch.tpu.manual_seed(42)
state = xm.get_rng_state()  # no direct equivalent: reported
