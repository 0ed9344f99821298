# Module header comment: keep me.
import torch  # torch itself
# comment between imports
import torch_xla.core.xla_model as xm  # the XLA model helpers

# A device comment
device = xm.xla_device()  # trailing comment after a device call


def train(model, data):  # def comment
    # leading comment inside the function
    for x in data:  # loop comment
        # about to run the step
        loss = model(x.to(device)).sum()  # forward
        loss.backward()  # backward
        # sync comment that sits above the call
        xm.mark_step()  # trailing comment on the sync
        # comment after the sync
    # end of loop
    return loss  # done


# final comment
