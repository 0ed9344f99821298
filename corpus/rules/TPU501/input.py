# TPU501 pjrt-device
import os

os.environ["PJRT_DEVICE"] = "TPU"
os.environ.setdefault("PJRT_DEVICE", "TPU")
if os.environ.get("PJRT_DEVICE") == "TPU":  # read that steers control flow: reported
    print("tpu")
