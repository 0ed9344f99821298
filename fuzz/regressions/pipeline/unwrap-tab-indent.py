import torch_xla
def main():
	    for epoch in range(3):
	        with torch_xla.step():
	            model.eval()
	            with torch.no_grad():
	                acc = 1
	        print(acc)
