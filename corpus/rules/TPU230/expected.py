# TPU230 spmd-internals: reported only
import torch_xla.distributed.spmd as xs
from torch_xla.distributed.spmd.debugging import visualize_tensor_sharding

xs.apply_backward_optimization_barrier(layer)
visualize_tensor_sharding(weight)
