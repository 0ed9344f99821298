# Classify points of two interleaved spirals with Lightning on a TPU VM. The data module
# writes its data set to disk once (prepare_data), every process then loads it (setup).
import os

import lightning as L
import lightning.pytorch.accelerators
import lightning.pytorch.plugins.precision
import lightning.pytorch.strategies
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset


class TorchTPUAccelerator(lightning.pytorch.accelerators.Accelerator):
    """The TorchTPU chip of this process (each process sees its chip as tpu:0), for
    Lightning's Trainer and Fabric: `devices` counts the processes on this node."""

    def setup_device(self, device):
        # Lightning's automatic strategy would put a custom accelerator on the CPU.
        if device.type != "tpu":
            raise ValueError(f"TorchTPUAccelerator got device {device}: pass the strategy torchtpu_*_kwargs give")
        torch.accelerator.set_device_index(0)

    def teardown(self):
        pass

    @staticmethod
    def parse_devices(devices):
        processes = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
        if devices not in ("auto", -1, "-1") and int(devices) != processes:
            raise ValueError(
                f"devices={devices!r}, but TorchTPU runs one process per chip and this node runs "
                f"{processes}: launch `torchrun --nproc_per_node={devices}` instead"
            )
        return processes

    @staticmethod
    def get_parallel_devices(devices):
        return [torch.device("tpu", 0)] * devices

    @staticmethod
    def auto_device_count():
        return int(os.environ.get("LOCAL_WORLD_SIZE", 1))

    @staticmethod
    def is_available():
        accelerator = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
        return accelerator is not None and accelerator.type == "tpu"

    @staticmethod
    def name():
        return "torchtpu"

    def get_device_stats(self, device):
        return {}


class TorchTPUDDPStrategy(lightning.pytorch.strategies.DDPStrategy):
    """The Trainer's DDP over TorchTPU's `tpu_dist` process group. Lightning would give DDP
    `device_ids=[0]` and build it inside a CUDA stream; TorchTPU's DDP takes no device ids."""

    def __init__(self, **kwargs):
        super().__init__(process_group_backend="tpu_dist", **kwargs)

    def setup_distributed(self):
        torchtpu_unbound_process_group(self.process_group_backend)
        super().setup_distributed()

    def determine_ddp_device_ids(self):
        return None


def torchtpu_trainer_kwargs(precision=None):
    """Lightning Trainer arguments for TorchTPU: one chip under `python`, DDP over every
    process under torchrun (one per chip)."""
    processes = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    world = int(os.environ.get("WORLD_SIZE", processes))
    if world > 1:
        strategy = TorchTPUDDPStrategy()
    else:
        strategy = lightning.pytorch.strategies.SingleDeviceStrategy(device=torch.device("tpu", 0))
    kwargs = dict(accelerator=TorchTPUAccelerator(), strategy=strategy, devices=processes, num_nodes=world // processes)
    if precision in ("bf16", "bf16-mixed"):
        # The plugin, not the string: Lightning would autocast on "cuda" (off here) and train in fp32.
        kwargs["plugins"] = [lightning.pytorch.plugins.precision.MixedPrecision("bf16-mixed", "tpu")]
    elif precision is not None:
        kwargs["precision"] = precision
    return kwargs


def torchtpu_unbound_process_group(backend):
    """Create the process group Lightning would bind to the chip (`device_id`), unbound:
    the gloo group its barriers then create (`prepare_data`, `rank_zero_first`) would
    inherit the binding, and gloo has no backend for a tpu device."""
    if not dist.is_initialized():
        dist.init_process_group(backend)


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
    trainer = L.Trainer(max_epochs=3, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False, **torchtpu_trainer_kwargs())
    model = SpiralNet()
    trainer.fit(model, datamodule=SpiralData())
    if trainer.is_global_zero:
        print("epoch losses", [f"{v:.6f}" for v in model.epoch_losses])
        print(f"val_acc={trainer.callback_metrics['val_acc'].item():.6f}")
    checksum = sum(p.detach().double().sum().item() for p in model.parameters())
    print(f"rank {trainer.global_rank} of {trainer.world_size} batches_on={sorted(model.devices_seen)} checksum={checksum:.8f}")


if __name__ == "__main__":
    main()
