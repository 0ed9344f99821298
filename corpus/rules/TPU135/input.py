# TPU135 sample-generator
import torch
import torch_xla.utils.utils as xu

batch = (torch.zeros(8, 1, 28, 28), torch.zeros(8, dtype=torch.int64))
train_loader = xu.SampleGenerator(data=batch, sample_count=60000 // 8 // 4)
test_loader = xu.SampleGenerator(batch, 10)
for epoch in range(2):
    for x, y in train_loader:  # restarts every epoch, as SampleGenerator did
        pass
print(len(test_loader))
