# A Trainer fine-tune whose own subclass and callback ask torch_xla for the rank and the number of
# replicas: the Trainer subclass logs on the master only, a callback reports each process at the end.
import torch
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments


def toy_dataset(n=16, seq_len=8, vocab=64):
    g = torch.Generator().manual_seed(7)
    rows = []
    for i in range(n):
        ids = torch.randint(1, vocab, (seq_len,), generator=g)
        rows.append({"input_ids": ids, "attention_mask": torch.ones(seq_len, dtype=torch.long), "labels": torch.tensor(i % 2)})
    return rows


class ReplicaTrainer(Trainer):
    def log(self, logs, *args, **kwargs):
        if "loss" in logs and xm.is_master_ordinal(local=False):
            print(f"step {self.state.global_step} of {xr.world_size()} replicas loss={logs['loss']:.6f}")
        super().log(logs, *args, **kwargs)


class ReportEnd(TrainerCallback):
    def on_train_end(self, args, state, control, model=None, **kwargs):
        checksum = sum(p.detach().double().sum().item() for p in model.parameters())
        print(f"rank {xr.global_ordinal()} of {xr.world_size()} steps={state.global_step} checksum={checksum:.8f}")


def main():
    torch.manual_seed(0)
    config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
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
    trainer = ReplicaTrainer(model=model, args=args, train_dataset=toy_dataset(), callbacks=[ReportEnd()])
    result = trainer.train()
    params_on = {p.device.type for p in trainer.model.parameters()}
    assert "cpu" not in params_on, f"the Trainer trained on the CPU: {params_on}"
    print(f"params_on={sorted(params_on)} train_loss={result.training_loss:.6f}")


if __name__ == "__main__":
    main()
