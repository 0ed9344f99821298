# Module header comment: keep me.
import torch  # torch itself
# comment between imports

# A device comment
device = torch.device("tpu")  # trailing comment after a device call


def train(model, data):  # def comment
    # leading comment inside the function
    for x in data:  # loop comment
        # about to run the step
        loss = model(x.to(device)).sum()  # forward
        loss.backward()  # backward
        # sync comment that sits above the call
        # comment after the sync
    # end of loop
    return loss  # done


# final comment
