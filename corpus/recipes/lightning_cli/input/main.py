# A Lightning fine-tune driven by LightningCLI, as it ran on a Cloud TPU VM: the Trainer's
# `accelerator: tpu` and `devices: 8` come from config.yaml (`python main.py fit --config config.yaml`).
import lightning as L
import torch
from lightning.pytorch.cli import LightningCLI
from torch.utils.data import DataLoader, TensorDataset


class RegressionData(L.LightningDataModule):
    def train_dataloader(self):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(64, 8, generator=g)
        y = x @ torch.arange(1.0, 9.0).unsqueeze(1) + 0.1 * torch.randn(64, 1, generator=g)
        return DataLoader(TensorDataset(x, y), batch_size=8, shuffle=False)


class Regression(L.LightningModule):
    def __init__(self, lr: float = 0.05):
        super().__init__()
        self.lr = lr
        self.layer = torch.nn.Linear(8, 1)
        self.trained_on = set()  # where the parameters were during training steps

    def training_step(self, batch, batch_idx):
        self.trained_on.update(p.device.type for p in self.parameters())
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        if self.trainer.is_global_zero:
            print(f"step {self.global_step} loss {loss.item():.6f}")
        return loss

    def on_train_end(self):
        checksum = sum(p.detach().double().sum().item() for p in self.parameters())
        print(f"rank {self.global_rank} of {self.trainer.world_size} trained_on={sorted(self.trained_on)} checksum={checksum:.8f}")

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


if __name__ == "__main__":
    L.seed_everything(0, verbose=False)
    LightningCLI(Regression, RegressionData, save_config_callback=None)
