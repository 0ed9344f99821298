# Fine-tune a small sentence classifier with the Hugging Face Trainer on a Cloud TPU.
# The Trainer finds the XLA device by itself; we only use xm for logging.
import torch
import torch_xla.core.xla_model as xm
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


def toy_dataset(n=16, seq_len=8, vocab=64):
    g = torch.Generator().manual_seed(1234)
    rows = []
    for i in range(n):
        ids = torch.randint(1, vocab, (seq_len,), generator=g)
        rows.append({"input_ids": ids, "attention_mask": torch.ones(seq_len, dtype=torch.long), "labels": torch.tensor(i % 2)})
    return rows


def main():
    torch.manual_seed(0)
    config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=16, num_labels=2,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertForSequenceClassification(config)

    args = TrainingArguments(
        output_dir="trainer_out",
        per_device_train_batch_size=4,
        max_steps=3,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=0,
        optim="adamw_torch",
        dataloader_drop_last=True,
        ddp_find_unused_parameters=False,
    )
    trainer = Trainer(model=model, args=args, train_dataset=toy_dataset())
    result = trainer.train()
    # where the Trainer kept the model: on a TPU run it must be the chip, never the CPU
    params_on = {p.device.type for p in trainer.model.parameters()}
    assert "cpu" not in params_on, f"the Trainer trained on the CPU: {params_on}"
    xm.master_print(f"device={args.device.type} params_on={sorted(params_on)} steps={result.global_step} train_loss={result.training_loss:.6f}")
    checksum = sum(p.detach().double().sum().item() for p in trainer.model.parameters())
    # the Trainer's own view of the job: one process of one unless it is really distributed
    print(f"rank {args.process_index} of {args.world_size} checksum={checksum:.8f}")
    trainer.save_model("final")  # written once, by the main process


if __name__ == "__main__":
    main()
