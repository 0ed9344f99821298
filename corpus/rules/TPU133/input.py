# TPU133 rng-state: reported only
import torch_xla.core.xla_model as xm

seed = xm.get_rng_state()
with xm.fork_rng():
    noise = torch.randn(4, device=device)
