# A Trainer fine-tune whose own subclass and callback ask torch_xla for the rank and the number of
# replicas: the Trainer subclass logs on the master only, a callback reports each process at the end.
import os
import torch
import torch.distributed as dist
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments
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


def toy_dataset(n=16, seq_len=8, vocab=64):
    g = torch.Generator().manual_seed(7)
    rows = []
    for i in range(n):
        ids = torch.randint(1, vocab, (seq_len,), generator=g)
        rows.append({"input_ids": ids, "attention_mask": torch.ones(seq_len, dtype=torch.long), "labels": torch.tensor(i % 2)})
    return rows


class ReplicaTrainer(torchtpu_trainer(Trainer)):
    def log(self, logs, *args, **kwargs):
        if "loss" in logs and self.args.process_index == 0:
            print(f"step {self.state.global_step} of {self.args.world_size} replicas loss={logs['loss']:.6f}")
        super().log(logs, *args, **kwargs)


class ReportEnd(TrainerCallback):
    def on_train_end(self, args, state, control, model=None, **kwargs):
        checksum = sum(p.detach().double().sum().item() for p in model.parameters())
        print(f"rank {args.process_index} of {args.world_size} steps={state.global_step} checksum={checksum:.8f}")


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
        use_cpu=accelerate_tpu_processes(),
    )
    trainer = ReplicaTrainer(model=model, args=args, train_dataset=toy_dataset(), callbacks=[ReportEnd()])
    result = trainer.train()
    params_on = {p.device.type for p in trainer.model.parameters()}
    assert "cpu" not in params_on, f"the Trainer trained on the CPU: {params_on}"
    print(f"params_on={sorted(params_on)} train_loss={result.training_loss:.6f}")


if __name__ == "__main__":
    main()
