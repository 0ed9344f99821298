# TPU712 trainer-tpu-arguments
from transformers import Seq2SeqTrainingArguments, TrainingArguments
from trl import SFTConfig

args = TrainingArguments(output_dir="out", tpu_num_cores=8, per_device_train_batch_size=8)
seq = Seq2SeqTrainingArguments("out", tpu_metrics_debug=True, tpu_num_cores=8)
plain = TrainingArguments(
    output_dir="out",
    use_cpu=False,
)
sft = SFTConfig(output_dir="out", max_length=512)
on_cpu = TrainingArguments(output_dir="out", use_cpu=True, tpu_num_cores=8)  # keeps the CPU, loses the core count
launcher_only = TrainingArguments(
    tpu_num_cores=8,
)
sharded = TrainingArguments(output_dir="out", fsdp="full_shard", fsdp_config={"fsdp_version": 2})  # FSDP: reported
