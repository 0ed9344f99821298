# Fine-tune Gemma with FSDPv2 on a TPU v5e using optimum-tpu and the HF Trainer.
import torch
from datasets import load_dataset
from optimum.tpu import fsdp_v2
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments, DataCollatorForLanguageModeling

model_id = "google/gemma-2b"
tokenizer = AutoTokenizer.from_pretrained(model_id)
tokenizer.pad_token = tokenizer.eos_token
model = AutoModelForCausalLM.from_pretrained(model_id, torch_dtype=torch.bfloat16)

data = load_dataset("Abirate/english_quotes", split="train")
data = data.map(lambda samples: tokenizer(samples["quote"], truncation=True, max_length=128), batched=True)

fsdp_training_args = fsdp_v2.get_fsdp_training_args(model)

trainer = Trainer(
    model=model,
    train_dataset=data,
    args=TrainingArguments(
        per_device_train_batch_size=32,
        num_train_epochs=1,
        max_steps=-1,
        output_dir="./output",
        optim="adafactor",
        logging_steps=1,
        dataloader_drop_last=True,  # Required for FSDPv2.
        **fsdp_training_args,
    ),
    data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False),
)
trainer.train()
