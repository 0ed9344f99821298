# TPU601 use-fsdp-v2
from optimum.tpu import fsdp_v2
import optimum.tpu.fsdp_v2 as fv2

fsdp_v2.use_fsdp_v2()
fv2.use_fsdp_v2()
cfg = fsdp_v2.get_fsdp_config("LlamaDecoderLayer")  # reported (TPU602 family)
