# A LightningModule whose hooks ask torch_xla for the rank and replica count: the epoch summary
# prints on the master only, and each process reports itself when fit ends.
import lightning as L
import torch
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, TensorDataset


class Regression(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(6, 1)
        self.epoch_losses = []
        self.trained_on = set()  # where the parameters were during training steps

    def setup(self, stage):
        self.replicas = xr.world_size()

    def train_dataloader(self):
        g = torch.Generator().manual_seed(3)
        x = torch.randn(48, 6, generator=g)
        y = x @ torch.linspace(0.5, 3.0, 6).unsqueeze(1) + 0.1 * torch.randn(48, 1, generator=g)
        return DataLoader(TensorDataset(x, y), batch_size=8, shuffle=False)

    def training_step(self, batch, batch_idx):
        self.trained_on.update(p.device.type for p in self.parameters())
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.epoch_losses.append(loss.detach())
        return loss

    def on_train_epoch_end(self):
        mean = torch.stack(self.epoch_losses).mean().item()
        self.epoch_losses.clear()
        if xm.is_master_ordinal(local=False):
            print(f"epoch {self.current_epoch} of {self.replicas} replicas loss={mean:.6f}")

    def on_fit_end(self):
        checksum = sum(p.detach().double().sum().item() for p in self.parameters())
        print(f"rank {xr.global_ordinal()} of {xr.world_size()} trained_on={sorted(self.trained_on)} checksum={checksum:.8f}")

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main():
    L.seed_everything(0, verbose=False)
    trainer = L.Trainer(accelerator="tpu", devices=8, max_epochs=2, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Regression())


if __name__ == "__main__":
    main()
