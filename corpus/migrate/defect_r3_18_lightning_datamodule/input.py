# Classify points of two interleaved spirals with Lightning on a TPU VM. The data module
# writes its data set to disk once (prepare_data), every process then loads it (setup).
import os

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset

DATA_FILE = "spirals.pt"


class SpiralData(L.LightningDataModule):
    def __init__(self, batch_size=16):
        super().__init__()
        self.batch_size = batch_size

    def prepare_data(self):
        # runs on one process per node: generate the data set once
        if os.path.exists(DATA_FILE):
            return
        g = torch.Generator().manual_seed(11)
        turns = torch.rand(96, generator=g) * 3.0
        arm = torch.arange(96) % 2
        angle = turns * 3.14159 + arm * 3.14159
        points = torch.stack([turns * torch.cos(angle), turns * torch.sin(angle)], dim=1)
        points += 0.05 * torch.randn(96, 2, generator=g)
        torch.save({"x": points, "y": arm}, DATA_FILE)

    def setup(self, stage=None):
        data = torch.load(DATA_FILE)
        self.train_set = TensorDataset(data["x"][:64], data["y"][:64])
        self.val_set = TensorDataset(data["x"][64:], data["y"][64:])

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size)

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.batch_size)


class SpiralNet(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.Tanh(), torch.nn.Linear(32, 2))
        self.epoch_losses = []
        self.devices_seen = set()

    def training_step(self, batch, batch_idx):
        x, y = batch
        self.devices_seen.add(x.device.type)
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, on_epoch=True, on_step=False, sync_dist=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        acc = (self.net(x).argmax(dim=1) == y).float().mean()
        self.log("val_acc", acc, sync_dist=True)

    def on_train_epoch_end(self):
        self.epoch_losses.append(self.trainer.callback_metrics["train_loss"].item())

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=0.01)


def main():
    L.seed_everything(0, verbose=False)
    trainer = L.Trainer(accelerator="tpu", devices=8, max_epochs=3, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    model = SpiralNet()
    trainer.fit(model, datamodule=SpiralData())
    if trainer.is_global_zero:
        print("epoch losses", [f"{v:.6f}" for v in model.epoch_losses])
        print(f"val_acc={trainer.callback_metrics['val_acc'].item():.6f}")
    checksum = sum(p.detach().double().sum().item() for p in model.parameters())
    print(f"rank {trainer.global_rank} of {trainer.world_size} batches_on={sorted(model.devices_seen)} checksum={checksum:.8f}")


if __name__ == "__main__":
    main()
