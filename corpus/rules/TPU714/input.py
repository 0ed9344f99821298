# TPU714 accelerate-tpu-processes
import accelerate
from accelerate import Accelerator, PartialState

accelerator = Accelerator(mixed_precision="bf16", gradient_accumulation_steps=2)
state = PartialState()
exploded = accelerate.Accelerator(
    log_with="tensorboard",
    cpu=False,
)
on_cpu = Accelerator(cpu=True)  # untouched: the CPU was asked for
sharded = Accelerator(fsdp_plugin=accelerate.FullyShardedDataParallelPlugin(fsdp_version=2))  # FSDP: reported
from_config = Accelerator(**{"mixed_precision": "bf16"})  # unpacked: reported, `cpu` may be in it
