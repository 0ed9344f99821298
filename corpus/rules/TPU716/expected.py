# TPU716 ray-torch-xla-config: reported only
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer
from ray.train.torch.xla import TorchXLAConfig


def train_loop(config):
    pass


trainer = TorchTrainer(
    train_loop,
    torch_config=TorchXLAConfig(neuron_parallel_compile=True),
    scaling_config=ScalingConfig(num_workers=4, resources_per_worker={"neuron_cores": 1}),
)
