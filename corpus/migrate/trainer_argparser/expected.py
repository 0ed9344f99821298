# Fine-tune a small classifier the way the Hugging Face example scripts do (run_glue.py): the
# arguments come from the command line through HfArgumentParser, written for torch_xla on a TPU VM.
import os
import sys
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from transformers import BertConfig, BertForSequenceClassification, HfArgumentParser, Trainer, TrainingArguments
import dataclasses
import functools


def accelerate_tpu_processes():
    """True in one of several TorchTPU processes (torchrun, `accelerate launch`).

    accelerate has no multi-process type for the "tpu" device: each rank would train
    alone. Its multi-process CPU mode (`cpu=True`) shards the data and wraps DDP without
    device ids; ACCELERATE_TORCH_DEVICE keeps the device "tpu", and the process group it
    finds is TorchTPU's (gloo for the CPU tensors accelerate gathers).
    """
    if (
        int(os.environ.get("WORLD_SIZE", "1")) <= 1
        or not torch.accelerator.is_available()
    ):
        return False
    if torch.accelerator.current_accelerator().type != "tpu":
        return False
    if os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true":
        # accelerate's multi-process CPU mode has no FSDP: it would silently use DDP.
        raise RuntimeError(
            "accelerate has no FSDP mode for TorchTPU: shard with torch.distributed.fsdp.fully_shard"
        )
    os.environ.setdefault("ACCELERATE_TORCH_DEVICE", "tpu")
    if not dist.is_initialized():
        dist.init_process_group("tpu:tpu_dist,cpu:gloo")
    return True


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def torchtpu_rank0_print(*args, **kwargs):
    """`print(*args, **kwargs)` on rank 0 only; every rank has evaluated the arguments."""
    if torchtpu_rank() == 0:
        print(*args, **kwargs)


@functools.cache
def torchtpu_trainer(cls):
    """`cls` (a transformers Trainer class) that keeps tied weights tied on TorchTPU.

    Moving a model to the chip gives each module its own copy of a shared parameter (an
    embedding and its LM head), and the Trainer re-ties them itself only on XLA devices.
    """

    class TorchTPUTrainer(cls):
        def _move_model_to_device(self, model, device):
            super()._move_model_to_device(model, device)
            if torch.device(device).type == "tpu" and hasattr(model, "tie_weights"):
                model.tie_weights()

    TorchTPUTrainer.__name__ = cls.__name__
    TorchTPUTrainer.__qualname__ = cls.__qualname__
    return TorchTPUTrainer


@functools.cache
def torchtpu_training_arguments(cls):
    """`cls` (TrainingArguments or a subclass) whose instances pick accelerate's multi-process
    mode on TorchTPU processes, however they are built (HfArgumentParser, `**config`), and
    take a 4.x script's keywords that transformers 5 removed.

    `use_cpu` must be set before `__post_init__`, which sets up the device.
    """

    fields = {f.name for f in dataclasses.fields(cls)}

    @dataclasses.dataclass
    class TorchTPUArguments(cls):
        def __init__(self, *args, **kwargs):
            # Keywords transformers 5 removed (TorchTPU's Trainer needs 5.20 or newer): torch_xla's
            # go, renamed ones take their new names.
            kwargs.pop("tpu_num_cores", None)
            kwargs.pop("tpu_metrics_debug", None)
            if "evaluation_strategy" in kwargs and "evaluation_strategy" not in fields:
                kwargs["eval_strategy"] = kwargs.pop("evaluation_strategy")
            if "warmup_ratio" in kwargs and "warmup_ratio" not in fields:
                ratio = kwargs.pop("warmup_ratio")
                if ratio and not kwargs.get("warmup_steps"):
                    if not 0 < ratio < 1:
                        raise ValueError(
                            f"warmup_ratio={ratio}: transformers 5 takes a ratio below 1 as warmup_steps"
                        )
                    kwargs["warmup_steps"] = ratio
            if "logging_dir" in kwargs and "logging_dir" not in fields:
                logging_dir = kwargs.pop("logging_dir")
                if logging_dir is not None:
                    os.environ.setdefault("TENSORBOARD_LOGGING_DIR", logging_dir)
            super().__init__(*args, **kwargs)

        def __post_init__(self):
            if not self.use_cpu:
                self.use_cpu = accelerate_tpu_processes()
                if self.use_cpu and self.fsdp:
                    # accelerate's multi-process CPU mode has no FSDP: it would silently use DDP.
                    raise RuntimeError(
                        "accelerate has no FSDP mode for TorchTPU: shard with torch.distributed.fsdp.fully_shard"
                    )
            super().__post_init__()

        def __reduce_ex__(self, protocol):
            # Pickled (the Trainer's `training_args.bin`) as `cls`: loadable without this helper.
            if type(self) is not TorchTPUArguments:
                return super().__reduce_ex__(protocol)
            return (object.__new__, (cls,), self.__dict__)

    TorchTPUArguments.__name__ = cls.__name__
    TorchTPUArguments.__qualname__ = cls.__qualname__
    return TorchTPUArguments


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
    parser = HfArgumentParser((ModelArguments, DataArguments, torchtpu_training_arguments(TrainingArguments)))
    if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        model_args, data_args, training_args = parser.parse_json_file(json_file=sys.argv[1])
    else:
        model_args, data_args, training_args = parser.parse_args_into_dataclasses()

    torch.manual_seed(training_args.seed)
    config = BertConfig(vocab_size=64, hidden_size=model_args.hidden_size, num_hidden_layers=model_args.num_layers,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=16, num_labels=2,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertForSequenceClassification(config)
    trainer = torchtpu_trainer(Trainer)(model=model, args=training_args, train_dataset=toy_dataset(data_args.num_examples, data_args.seq_len))
    result = trainer.train()
    params_on = {p.device.type for p in trainer.model.parameters()}
    assert "cpu" not in params_on, f"the Trainer trained on the CPU: {params_on}"
    torchtpu_rank0_print(f"device={training_args.device.type} params_on={sorted(params_on)} steps={result.global_step} train_loss={result.training_loss:.6f}")
    checksum = sum(p.detach().double().sum().item() for p in trainer.model.parameters())
    print(f"rank {training_args.process_index} of {training_args.world_size} checksum={checksum:.8f}")
    trainer.save_model("final")


if __name__ == "__main__":
    main()
