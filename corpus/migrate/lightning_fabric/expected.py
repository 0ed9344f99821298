# A Lightning Fabric loop as it ran on a Cloud TPU VM: `Fabric(accelerator="tpu", devices=8)`
# started one torch_xla process per core (`fabric.launch`), and Fabric's XLA strategy pointed the
# optimizer, built on the CPU parameters, at the ones on the device.
import os
import lightning as L
import lightning.fabric.plugins.precision
import lightning.fabric.strategies
import lightning.pytorch.accelerators
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


class TorchTPUFabricDDPStrategy(lightning.fabric.strategies.DDPStrategy):
    """Fabric's DDP over `tpu_dist` (see TorchTPUDDPStrategy), which also points optimizers
    built before `fabric.setup` at the parameters on the chip."""

    def __init__(self, **kwargs):
        super().__init__(process_group_backend="tpu_dist", **kwargs)

    def _setup_distributed(self):
        torchtpu_unbound_process_group(self.process_group_backend)
        super()._setup_distributed()

    def _determine_ddp_device_ids(self):
        return None

    def module_to_device(self, module):
        self._moved = torchtpu_moved_parameters(module, super().module_to_device)

    def setup_optimizer(self, optimizer):
        return super().setup_optimizer(torchtpu_rebind_optimizer(optimizer, getattr(self, "_moved", {})))


class TorchTPUFabricSingleDeviceStrategy(lightning.fabric.strategies.SingleDeviceStrategy):
    """Fabric on one chip; points optimizers built before `fabric.setup` at the parameters
    on the chip."""

    def module_to_device(self, module):
        self._moved = torchtpu_moved_parameters(module, super().module_to_device)

    def setup_optimizer(self, optimizer):
        return super().setup_optimizer(torchtpu_rebind_optimizer(optimizer, getattr(self, "_moved", {})))


def torchtpu_fabric_kwargs(precision=None):
    """Lightning Fabric arguments for TorchTPU: one chip under `python`, DDP over every
    process under torchrun (one per chip)."""
    processes = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    world = int(os.environ.get("WORLD_SIZE", processes))
    if world > 1:
        strategy = TorchTPUFabricDDPStrategy()
    else:
        strategy = TorchTPUFabricSingleDeviceStrategy(device=torch.device("tpu", 0))
    kwargs = dict(accelerator=TorchTPUAccelerator(), strategy=strategy, devices=processes, num_nodes=world // processes)
    if precision in ("bf16", "bf16-mixed"):
        # The plugin, not the string: Lightning would autocast on "cuda" (off here).
        kwargs["plugins"] = [lightning.fabric.plugins.precision.MixedPrecision("bf16-mixed", "tpu")]
    elif precision is not None:
        kwargs["precision"] = precision
    return kwargs


def torchtpu_moved_parameters(module, move):
    """Move `module` with `move`; which tpu parameter replaced which CPU one.

    Moving to the chip makes new Parameter objects, so an optimizer built before keeps
    updating the CPU ones (torch_xla's Lightning strategy rebound them; others do not).
    """
    before = dict(module.named_parameters())
    move(module)
    after = dict(module.named_parameters())
    return {p: after[name] for name, p in before.items() if name in after}


def torchtpu_rebind_optimizer(optimizer, moved):
    """Point `optimizer` at the moved parameters (see torchtpu_moved_parameters)."""
    for group in optimizer.param_groups:
        group["params"] = [moved.get(p, p) for p in group["params"]]
    return optimizer


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


def train(fabric):
    fabric.seed_everything(0, verbose=False)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    model, optimizer = fabric.setup(model, optimizer)
    loader = fabric.setup_dataloaders(make_loader())
    trained_on = set()
    for epoch in range(2):
        total = 0.0
        for x, y in loader:
            trained_on.update(p.device.type for p in model.parameters())
            loss = torch.nn.functional.mse_loss(model(x), y)
            fabric.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            total += loss.item()
        mean = fabric.all_reduce(torch.tensor(total / len(loader), device=fabric.device), reduce_op="mean")
        fabric.print(f"epoch {epoch} loss={mean.item():.6f}")
    checksum = sum(p.detach().double().sum().item() for p in model.parameters())
    print(f"rank {fabric.global_rank} of {fabric.world_size} trained_on={sorted(trained_on)} checksum={checksum:.8f}")
    fabric.save("model.ckpt", {"model": model, "optimizer": optimizer})


if __name__ == "__main__":
    fabric = L.Fabric(**torchtpu_fabric_kwargs("32-true"))
    fabric.launch(train)
