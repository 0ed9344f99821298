# Supervised fine-tuning with TRL's SFTTrainer on a Cloud TPU VM, the way optimum-tpu's examples
# did it: the Trainer finds the XLA device itself; xm only reports where the model trained.
import os
import torch
import torch.distributed as dist
from datasets import Dataset
from trl import SFTConfig, SFTTrainer
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


def tiny_model_and_tokenizer():
    """Offline stand-in for a hub checkpoint: a 2-layer Llama and a word-level tokenizer."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = "<pad> <eos> <bos> <unk> be yourself everyone else is already taken so it goes".split()
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", bos_token="<bos>",
                                        unk_token="<unk>", pad_token="<pad>")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(words), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, pad_token_id=0, eos_token_id=1, bos_token_id=2)
    return LlamaForCausalLM(config), tokenizer


def main():
    model, tokenizer = tiny_model_and_tokenizer()
    quotes = ["be yourself everyone else is already taken", "so it goes", "everyone else is taken", "it goes"] * 4
    args = SFTConfig(
        output_dir="sft_out",
        per_device_train_batch_size=2,
        max_steps=4,
        learning_rate=1e-3,
        max_length=16,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=0,
        optim="adamw_torch",
        bf16=False,  # fp32, so that the runs compare (TRL turns bf16 on where the device has it)
        dataloader_drop_last=True,
        ddp_find_unused_parameters=False,
        use_cpu=accelerate_tpu_processes(),
    )
    trainer = torchtpu_trainer(SFTTrainer)(model=model, args=args, train_dataset=Dataset.from_dict({"text": quotes}),
                         processing_class=tokenizer)
    result = trainer.train()
    params_on = {p.device.type for p in trainer.model.parameters()}
    torchtpu_rank0_print(f"steps={result.global_step} train_loss={result.training_loss:.6f} params_on={sorted(params_on)}")
    checksum = sum(p.detach().double().sum().item() for p in trainer.model.parameters())
    print(f"rank {args.process_index} of {args.world_size} checksum={checksum:.8f}")


if __name__ == "__main__":
    main()
