# TPU715 pytorch-lightning-tpu: reported only
import pytorch_lightning as pl
from pytorch_lightning import Trainer

old = Trainer(tpu_cores=8)
spawn = pl.Trainer(accelerator="tpu", devices=8, strategy="tpu_spawn")
cpu = pl.Trainer(accelerator="cpu")  # untouched
