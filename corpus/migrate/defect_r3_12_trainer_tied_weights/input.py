# Fine-tune a tiny GPT-2 language model with the Hugging Face Trainer on a TPU.
# GPT-2 ties its LM head to the token embeddings: one matrix, trained once.
import torch
import torch_xla.core.xla_model as xm
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


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
    )
    trainer = Trainer(model=model, args=args, train_dataset=toy_corpus())
    result = trainer.train()
    m = trainer.model
    tied = m.lm_head.weight is m.transformer.wte.weight
    xm.master_print(f"tied={tied} steps={result.global_step} train_loss={result.training_loss:.6f}")
    checksum = sum(p.detach().double().sum().item() for p in m.parameters())
    print(f"rank {args.process_index} of {args.world_size} checksum={checksum:.8f}")


if __name__ == "__main__":
    main()
