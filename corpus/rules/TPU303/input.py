# TPU303 matmul-precision
import torch_xla.backends

torch_xla.backends.set_mat_mul_precision("highest")
torch_xla.backends.set_mat_mul_precision("default")
torch_xla.backends.set_mat_mul_precision("high")
p = torch_xla.backends.get_mat_mul_precision()  # getter: TPU304
