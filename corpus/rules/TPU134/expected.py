# TPU134 optimization-barrier: reported only
import torch_xla.core.xla_model as xm

xm.optimization_barrier_([hidden, residual])
