# TPU106 rng-seed
import torch_xla
import torch_xla.core.xla_model as xm

xm.set_rng_state(1234)
torch_xla.manual_seed(42)
state = xm.get_rng_state()  # no direct equivalent: reported
