# TPU132 xla-internals: reported only
import torch_xla
import torch_xla.core.xla_model as xm

torch_xla._XLAC._xla_sync_multi(tensors, devices=[], wait=True)
spec = torch_xla._XLAC._get_xla_sharding_spec(t)
xm.set_replication(device, [device])
