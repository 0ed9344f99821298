# The TorchTPU form of input.py that TPU716's help gives, written by a person: Ray Train's own
# TorchTPU backend (Ray 2.60, Train v2, its default): ScalingConfig(use_tpu=True) with the slice's
# topology and accelerator type, TorchTPU's launch environment passed to the workers (Ray does not
# set it), `get_device()` the chip, `prepare_model` DDP without device_ids over `tpu_dist`.
import os

import ray
import ray.train
import ray.train.torch
import torch
import torch.distributed as dist
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer

WORKERS = 2  # one per chip


def train_func(config):
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    device = ray.train.torch.get_device()  # torch.device("tpu")
    g = torch.Generator().manual_seed(0)
    x_all = torch.randn(32, 4, generator=g)
    y_all = x_all @ torch.arange(1.0, 5.0).unsqueeze(1) + 0.5
    x, y = x_all[rank::world].to(device), y_all[rank::world].to(device)
    torch.manual_seed(0)
    model = ray.train.torch.prepare_model(torch.nn.Linear(4, 1))  # to the chip, then DDP
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(5):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    assert {p.device.type for p in model.parameters()} == {"tpu"}, "the parameters left the chip"
    checksum = sum(p.detach().double().sum().item() for p in model.parameters())
    print(f"RESULT rank={rank} world_size={world} backend={dist.get_backend()} checksum={checksum:.9f}")


def main():
    # TorchTPU's launch environment for one process per chip of this host; Ray 2.60 does not set
    # it, and `tpu_dist` refuses to start without it.
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=WORKERS)
    launch_env = {k: v for k, v in os.environ.items() if k.startswith("TORCH_TPU_")}
    ray.init(
        runtime_env={"env_vars": launch_env},
        # A stand-in for a TPU host's resources (a real one advertises them itself): the chips, and
        # the accelerator type ScalingConfig asks for.
        resources={"TPU": WORKERS, "accelerator_type:TPU-V6E": 1},
        num_cpus=WORKERS,
        include_dashboard=False,
        _temp_dir=os.path.abspath("ray"),
    )
    try:
        trainer = TorchTrainer(
            train_func,
            scaling_config=ScalingConfig(
                num_workers=WORKERS,
                use_tpu=True,
                resources_per_worker={"TPU": 1},
                topology="1x1",  # a v6e-4 host is "2x2" with 4 workers; required beyond one worker
                accelerator_type="TPU-V6E",
            ),
            run_config=RunConfig(storage_path=os.path.abspath("ray_results")),
        )
        trainer.fit()
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
