# A Lightning fine-tune as it ran on a Cloud TPU VM: `accelerator="tpu"` with 8 devices, and
# Lightning's XLA strategy started one torch_xla process per core by itself.
import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset


def make_loader():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=g)
    y = x @ torch.arange(1.0, 9.0).unsqueeze(1) + 0.1 * torch.randn(64, 1, generator=g)
    return DataLoader(TensorDataset(x, y), batch_size=8, shuffle=False)


class Regression(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)
        self.losses = []
        self.trained_on = set()  # where the parameters were during training steps

    def training_step(self, batch, batch_idx):
        self.trained_on.update(p.device.type for p in self.parameters())
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.losses.append(loss.item())
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main():
    L.seed_everything(0, verbose=False)
    trainer = L.Trainer(accelerator="tpu", devices=8, max_epochs=2, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False)
    model = Regression()
    trainer.fit(model, make_loader())
    half = len(model.losses) // 2
    if trainer.is_global_zero:
        print("epoch losses", [round(sum(model.losses[i:i + half]) / half, 6) for i in (0, half)])
    checksum = sum(p.detach().double().sum().item() for p in model.parameters())
    print(f"rank {trainer.global_rank} of {trainer.world_size} trained_on={sorted(model.trained_on)} checksum={checksum:.8f}")
    trainer.save_checkpoint("model.ckpt")  # every rank calls it; rank 0 writes


if __name__ == "__main__":
    main()
