# TPU712 trainer-tpu-arguments
from transformers import Seq2SeqTrainingArguments, TrainingArguments

args = TrainingArguments(output_dir="out", tpu_num_cores=8, per_device_train_batch_size=8)
seq = Seq2SeqTrainingArguments("out", tpu_metrics_debug=True, tpu_num_cores=8)
plain = TrainingArguments(output_dir="out")  # untouched
