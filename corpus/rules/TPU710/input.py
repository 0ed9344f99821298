# TPU710 lightning-tpu
import lightning as L
from lightning.fabric import Fabric

trainer = L.Trainer(accelerator="tpu", devices=8)
bf16 = L.pytorch.Trainer(
    accelerator="tpu",
    devices=8,
    precision="bf16-mixed",
    max_epochs=3,
)
fsdp = L.pytorch.Trainer(strategy="xla_fsdp", devices=8)  # FSDP: reported
fabric = Fabric(accelerator="tpu", devices=8)
gpu = L.Trainer(accelerator="gpu", devices=8)  # not TPU: untouched
device = "tpu"  # TorchTPU's device name: untouched


def configure(trainer: L.Trainer) -> None:  # an annotation calls nothing: untouched
    print(trainer.max_epochs)
