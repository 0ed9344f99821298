# TPU404 xla-test-utils: the helpers the file calls are defined in it; the rest is reported
import torch_xla.test.test_utils as test_utils

writer = test_utils.get_summary_writer("/tmp/logs")
test_utils.print_training_update(device, step, loss.item(), tracker.rate(), tracker.global_rate())
stamp = test_utils.now()  # not one of the logging helpers: reported
