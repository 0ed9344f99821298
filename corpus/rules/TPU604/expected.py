# TPU604 optimum-distributed-model: reported only
from optimum.tpu.distributed_model import DistributedModel


def sample(logits):
    return logits.argmax(-1)


model = DistributedModel("google/gemma-2b", sample)
