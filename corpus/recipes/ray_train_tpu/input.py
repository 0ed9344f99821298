# Ray Train on torch_xla: a TorchTrainer with Ray's TorchXLAConfig, each worker training on its
# XLA device. In Ray 2.60 TorchXLAConfig is AWS Neuron's backend ("only neuron_cores is supported").
import ray
import ray.train
import ray.train.torch
import torch
import torch.distributed as dist
import torch_xla.core.xla_model as xm
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer
from ray.train.torch.xla import TorchXLAConfig


def train_func(config):
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    device = xm.xla_device()
    g = torch.Generator().manual_seed(0)
    x_all = torch.randn(32, 4, generator=g)
    y_all = x_all @ torch.arange(1.0, 5.0).unsqueeze(1) + 0.5
    x, y = x_all[rank::world].to(device), y_all[rank::world].to(device)
    torch.manual_seed(0)
    model = ray.train.torch.prepare_model(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(5):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        xm.mark_step()
    checksum = sum(p.detach().double().sum().item() for p in model.parameters())
    print(f"RESULT rank={rank} world_size={world} backend={dist.get_backend()} checksum={checksum:.9f}")


def main():
    ray.init()
    trainer = TorchTrainer(
        train_func,
        torch_config=TorchXLAConfig(),
        scaling_config=ScalingConfig(num_workers=2, resources_per_worker={"neuron_cores": 1}),
    )
    trainer.fit()


if __name__ == "__main__":
    main()
