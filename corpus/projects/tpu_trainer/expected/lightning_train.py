"""The same model with Lightning, on a TPU v4-8."""
import lightning as L
import torch
from lightning.pytorch.strategies import XLAStrategy

from tpu_trainer.model import Classifier


class LitClassifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.model = Classifier()

    def training_step(self, batch, batch_idx):
        tokens, labels = batch
        return torch.nn.functional.cross_entropy(self.model(tokens), labels)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


if __name__ == "__main__":
    trainer = L.Trainer(accelerator="tpu", devices=8, strategy=XLAStrategy(sync_module_states=True), max_epochs=2)
    trainer.fit(LitClassifier(), train_dataloaders=None)
