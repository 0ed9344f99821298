# Fine-tune a small classifier the way the Hugging Face example scripts do (run_glue.py): the
# arguments come from the command line through HfArgumentParser, written for torch_xla on a TPU VM.
import sys
from dataclasses import dataclass, field

import torch
import torch_xla.core.xla_model as xm
from transformers import BertConfig, BertForSequenceClassification, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ModelArguments:
    hidden_size: int = field(default=32, metadata={"help": "width of the toy BERT"})
    num_layers: int = field(default=2)


@dataclass
class DataArguments:
    num_examples: int = field(default=16)
    seq_len: int = field(default=8)


def toy_dataset(n, seq_len, vocab=64):
    g = torch.Generator().manual_seed(1234)
    rows = []
    for i in range(n):
        ids = torch.randint(1, vocab, (seq_len,), generator=g)
        rows.append({"input_ids": ids, "attention_mask": torch.ones(seq_len, dtype=torch.long), "labels": torch.tensor(i % 2)})
    return rows


def main():
    parser = HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))
    if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        model_args, data_args, training_args = parser.parse_json_file(json_file=sys.argv[1])
    else:
        model_args, data_args, training_args = parser.parse_args_into_dataclasses()

    torch.manual_seed(training_args.seed)
    config = BertConfig(vocab_size=64, hidden_size=model_args.hidden_size, num_hidden_layers=model_args.num_layers,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=16, num_labels=2,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertForSequenceClassification(config)
    trainer = Trainer(model=model, args=training_args, train_dataset=toy_dataset(data_args.num_examples, data_args.seq_len))
    result = trainer.train()
    params_on = {p.device.type for p in trainer.model.parameters()}
    assert "cpu" not in params_on, f"the Trainer trained on the CPU: {params_on}"
    xm.master_print(f"device={training_args.device.type} params_on={sorted(params_on)} steps={result.global_step} train_loss={result.training_loss:.6f}")
    checksum = sum(p.detach().double().sum().item() for p in trainer.model.parameters())
    print(f"rank {training_args.process_index} of {training_args.world_size} checksum={checksum:.8f}")
    trainer.save_model("final")


if __name__ == "__main__":
    main()
