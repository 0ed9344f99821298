# TPU607 optimum-tensor-parallel: reported only
from optimum.tpu.xla_model_parallel import ColumnParallelLinear, get_model_parallel_rank

proj = ColumnParallelLinear.create(4096, 11008, bias=False)
rank = get_model_parallel_rank()
