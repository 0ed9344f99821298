# TPU505 xla-cache-env: initialize_cache is deleted (TorchTPU caches by itself); the rest is reported
import os

import torch_xla.runtime as xr

os.environ["XLA_PERSISTENT_CACHE_PATH"] = "/tmp/cache"
print("cached graphs:", xr.get_num_cached_compilation_graph())  # no TorchTPU count: reported
