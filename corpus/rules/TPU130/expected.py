# TPU130 step-closure
def log(loss):
    print(loss.item())


loss = None
log(loss)
log(loss)
(lambda: print("step done"))()
(lambda step: print(step))(3)
