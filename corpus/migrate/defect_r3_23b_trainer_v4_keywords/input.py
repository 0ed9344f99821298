"""Sentiment fine-tune on a Cloud TPU (transformers 4.x era), its arguments written in the call.

Run with: python xla_spawn.py --num_cores 8 finetune.py
"""
import numpy as np
import torch
import torch_xla.core.xla_model as xm
from transformers import DistilBertConfig, DistilBertForSequenceClassification, Trainer, TrainingArguments



class ReviewDataset(torch.utils.data.Dataset):
    """Token ids of made-up reviews: label 1 when the 'good' tokens win."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(3, 40, (n, 10), generator=g)
        self.labels = ((self.ids < 20).sum(dim=1) > 5).long()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(10, dtype=torch.long), "labels": self.labels[i]}


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    return {"accuracy": float((np.argmax(logits, axis=-1) == labels).mean())}


def main():
    torch.manual_seed(0)
    config = DistilBertConfig(vocab_size=40, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                              max_position_embeddings=16, dropout=0.0, attention_dropout=0.0,
                              seq_classif_dropout=0.0, num_labels=2)
    model = DistilBertForSequenceClassification(config)
    training_args = TrainingArguments(
        output_dir="./results",
        num_train_epochs=2,
        per_device_train_batch_size=4,
        per_device_eval_batch_size=4,
        learning_rate=3e-3,
        warmup_ratio=0.25,
        weight_decay=0.01,
        evaluation_strategy="epoch",
        save_strategy="no",
        logging_dir="./logs",
        logging_steps=2,
        report_to="none",
        seed=42,
        tpu_num_cores=8,
        dataloader_drop_last=True,
        optim="adamw_torch",
    )
    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=ReviewDataset(16, seed=1),
        eval_dataset=ReviewDataset(8, seed=2),
        compute_metrics=compute_metrics,
    )
    result = trainer.train()
    metrics = trainer.evaluate()
    xm.master_print(f"train_loss={result.training_loss:.6f} eval_loss={metrics['eval_loss']:.6f} eval_accuracy={metrics['eval_accuracy']:.6f}")
    checksum = sum(p.detach().double().sum().item() for p in trainer.model.parameters())
    print(f"rank {training_args.process_index} of {training_args.world_size} checksum={checksum:.8f}")


def _mp_fn(index):
    # For xla_spawn (TPUs)
    main()


if __name__ == "__main__":
    main()
