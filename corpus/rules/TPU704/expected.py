# TPU704 is-torch-tpu-available: reported only
from transformers.utils import is_torch_tpu_available, is_torch_xla_available

if is_torch_tpu_available():
    print("old-style TPU check")
if is_torch_xla_available():
    print("torch_xla present")
