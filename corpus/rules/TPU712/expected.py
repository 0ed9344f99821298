# TPU712 trainer-tpu-arguments
from transformers import Seq2SeqTrainingArguments, TrainingArguments

args = TrainingArguments(output_dir="out", per_device_train_batch_size=8)
seq = Seq2SeqTrainingArguments("out")
plain = TrainingArguments(output_dir="out")  # untouched
