# TPU221 legacy-parallel-wrappers: reported only
import torch_xla.distributed.xla_multiprocessing as xmp

WRAPPED = xmp.MpModelWrapper(model)
SERIAL = xmp.MpSerialExecutor()
