# TPU111 step-context
import torch
import torch_xla
for i in range(2):
    with torch_xla.step():
	        x = torch.ones(2) * i
	        print(x)
