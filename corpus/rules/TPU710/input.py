# TPU710 lightning-tpu: reported only
import lightning as L
from pytorch_lightning import Trainer

trainer = L.Trainer(accelerator="tpu", devices=8)
fsdp = L.pytorch.Trainer(strategy="xla_fsdp", devices=8)
old = Trainer(tpu_cores=8)
fabric = L.Fabric(accelerator="tpu")
gpu = L.Trainer(accelerator="gpu", devices=8)  # not TPU: untouched
device = "tpu"  # TorchTPU's device name: untouched
