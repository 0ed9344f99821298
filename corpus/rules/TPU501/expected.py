# TPU501 pjrt-device
import os

print(os.environ.get("HF_HOME", "~/.cache/huggingface"))  # another variable: left alone
# Where the project reads PJRT_DEVICE itself (its own switch), the assignments stay:
# corpus/migrate/env_vars and corpus/projects/pjrt_switch.
