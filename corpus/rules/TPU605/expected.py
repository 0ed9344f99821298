# TPU605 xla-fsdp-config: reported only
from transformers import TrainingArguments

args = TrainingArguments(
    output_dir="out",
    fsdp="full_shard",
    fsdp_config={"transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"], "xla": True, "xla_fsdp_v2": True},
)
cfg = {"xla_fsdp_grad_ckpt": True}
other = {"xla_metrics": 1}  # not a transformers FSDP key: untouched
