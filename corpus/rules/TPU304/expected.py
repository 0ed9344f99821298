# TPU304 get-matmul-precision
import torch

p = torch.get_float32_matmul_precision()
if torch.get_float32_matmul_precision() == "medium":
    print("fast matmuls")
