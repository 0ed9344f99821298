# TPU506 xrt-env: assignments deleted
import os

os.environ["TPU_NUM_DEVICES"] = "8"
