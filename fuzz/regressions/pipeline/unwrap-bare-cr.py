import torch_xla

for i in (2):
 with torch_xla.step():
        x        n
