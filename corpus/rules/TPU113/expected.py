# TPU113 is-xla-tensor
def on_device(t):
    return t.device.type == "tpu"

if not (batch[0].device.type == "tpu"):
    batch = [b.to("tpu") for b in batch]
