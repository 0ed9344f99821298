# TPU502 xla-dtype-env: reported only
import os

os.environ["XLA_USE_BF16"] = "1"
os.environ["XLA_DOWNCAST_BF16"] = "1"
