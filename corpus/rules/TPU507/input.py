# TPU507 libtpu-init-args: reported only
import os

os.environ["LIBTPU_INIT_ARGS"] = "--xla_enable_async_collective_permute=true"
