# TPU710 lightning-tpu
import os
import lightning as L
import lightning.fabric.plugins.precision
import lightning.fabric.strategies
import lightning.pytorch.accelerators
import lightning.pytorch.plugins.precision
import lightning.pytorch.strategies
from lightning.fabric import Fabric
import torch
import torch.distributed as dist


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
    kwargs = dict(
        accelerator=TorchTPUAccelerator(),
        strategy=strategy,
        devices=processes,
        num_nodes=world // processes,
    )
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


def torchtpu_trainer_kwargs(precision=None):
    """Lightning Trainer arguments for TorchTPU: one chip under `python`, DDP over every
    process under torchrun (one per chip)."""
    processes = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    world = int(os.environ.get("WORLD_SIZE", processes))
    if world > 1:
        strategy = TorchTPUDDPStrategy()
    else:
        strategy = lightning.pytorch.strategies.SingleDeviceStrategy(
            device=torch.device("tpu", 0)
        )
    kwargs = dict(
        accelerator=TorchTPUAccelerator(),
        strategy=strategy,
        devices=processes,
        num_nodes=world // processes,
    )
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


trainer = L.Trainer(**torchtpu_trainer_kwargs())
bf16 = L.pytorch.Trainer(
    max_epochs=3,
    **torchtpu_trainer_kwargs("bf16-mixed"),
)
fsdp = L.pytorch.Trainer(strategy="xla_fsdp", devices=8)  # FSDP: reported
fabric = Fabric(**torchtpu_fabric_kwargs())
gpu = L.Trainer(accelerator="gpu", devices=8)  # not TPU: untouched
device = "tpu"  # TorchTPU's device name: untouched


def configure(trainer: L.Trainer) -> None:  # an annotation calls nothing: untouched
    print(trainer.max_epochs)
