# Module header comment: keep me.
import torch  # torch itself
# comment between imports

# A device comment
device = torch.device("tpu:0")  # trailing comment after a device call


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


if __name__ == "__main__":  # driver comment
    # seeded model and batches, built on the CPU
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2).to(device)  # moved to the device
    data = [torch.randn(3, 4) for _ in range(3)]  # three batches
    loss = train(model, data)
    # print the last loss and the accumulated gradient
    print(f"loss={loss.item():.6f} grad={model.weight.grad.sum().item():.6f}")  # done
