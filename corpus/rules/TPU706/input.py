# TPU706 xla-availability-probe
import importlib
import importlib.util

HAS_XLA = importlib.util.find_spec("torch_xla") is not None
xla = importlib.import_module("torch_xla.core.xla_model") if HAS_XLA else None
HAS_NUMPY = importlib.util.find_spec("numpy") is not None  # not a torch_xla probe: untouched
