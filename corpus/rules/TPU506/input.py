# TPU506 xrt-env: assignments deleted
import os

os.environ["XRT_TPU_CONFIG"] = "localservice;0;localhost:51011"
os.environ["TPU_NUM_DEVICES"] = "8"
os.environ["ENABLE_PJRT_COMPATIBILITY"] = "true"
