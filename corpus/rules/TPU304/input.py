# TPU304 get-matmul-precision
import torch_xla.backends

p = torch_xla.backends.get_mat_mul_precision()
if torch_xla.backends.get_mat_mul_precision() == "default":
    print("fast matmuls")
