# TPU215 mesh-reduce
import numpy as np
import torch_xla.core.xla_model as xm

acc = xm.mesh_reduce("acc", 0.9, np.mean)
best = xm.mesh_reduce("best", 1.0, max)
first = xm.mesh_reduce("first", 3, lambda xs: xs[0])
