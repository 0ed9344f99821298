"""Sentiment fine-tune on a Cloud TPU (transformers 4.x era).

Run with: python xla_spawn.py --num_cores 8 finetune.py
"""
import os
import numpy as np
import torch
import torch.distributed as dist
from transformers import DistilBertConfig, DistilBertForSequenceClassification, Trainer, TrainingArguments
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


training_config = {
    "output_dir": "./results",
    "num_train_epochs": 2,
    "per_device_train_batch_size": 4,
    "per_device_eval_batch_size": 4,
    "learning_rate": 3e-3,
    "warmup_ratio": 0.25,
    "weight_decay": 0.01,
    "evaluation_strategy": "epoch",
    "save_strategy": "no",
    "logging_dir": "./logs",
    "logging_steps": 2,
    "report_to": "none",
    "seed": 42,
    "tpu_num_cores": 8,
    "dataloader_drop_last": True,
    "optim": "adamw_torch",
}


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
    training_args = torchtpu_training_arguments(TrainingArguments)(**training_config)
    trainer = torchtpu_trainer(Trainer)(
        model=model,
        args=training_args,
        train_dataset=ReviewDataset(16, seed=1),
        eval_dataset=ReviewDataset(8, seed=2),
        compute_metrics=compute_metrics,
    )
    result = trainer.train()
    metrics = trainer.evaluate()
    torchtpu_rank0_print(f"train_loss={result.training_loss:.6f} eval_loss={metrics['eval_loss']:.6f} eval_accuracy={metrics['eval_accuracy']:.6f}")
    checksum = sum(p.detach().double().sum().item() for p in trainer.model.parameters())
    print(f"rank {training_args.process_index} of {training_args.world_size} checksum={checksum:.8f}")


def _mp_fn(index):
    # For xla_spawn (TPUs)
    main()


if __name__ == "__main__":
    main()
