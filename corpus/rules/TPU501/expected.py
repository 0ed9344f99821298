# TPU501 pjrt-device
import os

if os.environ.get("PJRT_DEVICE") == "TPU":  # read that steers control flow: reported
    print("tpu")
