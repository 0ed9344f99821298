# TPU503 xla-debug-env: reported only
import os

os.environ["XLA_IR_DEBUG"] = "1"
os.environ["XLA_HLO_DEBUG"] = "1"
os.environ["PT_XLA_DEBUG_LEVEL"] = "2"
os.environ["XLA_FLAGS"] = "--xla_dump_to=/tmp/dump"  # still honoured: untouched
