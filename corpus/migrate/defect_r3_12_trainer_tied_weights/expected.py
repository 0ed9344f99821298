# Fine-tune a tiny GPT-2 language model with the Hugging Face Trainer on a TPU.
# GPT-2 ties its LM head to the token embeddings: one matrix, trained once.
import os
import torch
import torch.distributed as dist
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
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


def toy_corpus(n=16, seq_len=8, vocab=48):
    g = torch.Generator().manual_seed(7)
    rows = []
    for _ in range(n):
        ids = torch.randint(0, vocab, (seq_len,), generator=g)
        rows.append({"input_ids": ids, "labels": ids.clone()})
    return rows


def main():
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=48, n_positions=16, n_embd=32, n_layer=2, n_head=2,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=True,
                        bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config)

    args = TrainingArguments(
        output_dir="lm_out",
        per_device_train_batch_size=4,
        max_steps=3,
        learning_rate=5e-3,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=0,
        optim="adamw_torch",
        dataloader_drop_last=True,
        use_cpu=accelerate_tpu_processes(),
    )
    trainer = torchtpu_trainer(Trainer)(model=model, args=args, train_dataset=toy_corpus())
    result = trainer.train()
    m = trainer.model
    tied = m.lm_head.weight is m.transformer.wte.weight
    torchtpu_rank0_print(f"tied={tied} steps={result.global_step} train_loss={result.training_loss:.6f}")
    checksum = sum(p.detach().double().sum().item() for p in m.parameters())
    print(f"rank {args.process_index} of {args.world_size} checksum={checksum:.8f}")


if __name__ == "__main__":
    main()
