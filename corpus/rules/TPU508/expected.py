# TPU508 tpu-topology-env: reported only (libtpu may still read these)
import os

os.environ["TPU_VISIBLE_CHIPS"] = "0,1"
os.environ["TPU_PROCESS_BOUNDS"] = "1,1,1"
print(os.environ.get("TPU_NUM_DEVICES", "8"))
