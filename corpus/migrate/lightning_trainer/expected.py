# A Lightning fine-tune as it ran on a Cloud TPU VM: `accelerator="tpu"` with 8 devices, and
# Lightning's XLA strategy started one torch_xla process per core by itself.
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
    trainer = L.Trainer(max_epochs=2, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, **torchtpu_trainer_kwargs())
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
