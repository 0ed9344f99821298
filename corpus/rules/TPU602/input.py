# TPU602 fsdp-training-args
from optimum.tpu import fsdp_v2
from transformers import AutoModelForCausalLM, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.2-1B")
args = TrainingArguments(output_dir="out", **fsdp_v2.get_fsdp_training_args(model))
config = fsdp_v2.get_fsdp_config("LlamaDecoderLayer")  # a config only: reported
