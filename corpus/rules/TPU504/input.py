# TPU504 xla-spmd-env: reported only
import os

os.environ["XLA_USE_SPMD"] = "1"
