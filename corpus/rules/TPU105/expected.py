# TPU105 eager-mode
import torch_xla

torch_xla.experimental.eager_mode(False)  # asked for lazy fusion: reported, not converted
