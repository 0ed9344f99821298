# TPU505 xla-cache-env: reported only
import os

import torch_xla.runtime as xr

os.environ["XLA_PERSISTENT_CACHE_PATH"] = "/tmp/cache"
xr.initialize_cache("/tmp/cache", readonly=False)
