# TPU130 step-closure
import torch_xla.core.xla_model as xm


def log(loss):
    print(loss.item())


loss = None
xm.add_step_closure(log, args=(loss,))
xm.add_step_closure(log, args=(loss,), run_async=True)
xm.add_step_closure(lambda: print("step done"))
xm.add_step_closure(lambda step: print(step), args=(3,))
