# TPU708 xla-dynamic-import: reported only
import importlib

xm = importlib.import_module("torch_xla.core.xla_model")
np = importlib.import_module("numpy")  # not torch_xla: untouched
