# TPU131 unlazy
print(loss.item())
