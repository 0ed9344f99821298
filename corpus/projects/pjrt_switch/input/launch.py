"""Entry point of the team's jobs: selects the accelerator, then runs the trainer."""
import os

# The trainer reads this to decide where it runs (see trainer.py).
os.environ.setdefault("PJRT_DEVICE", "TPU")

import trainer  # noqa: E402

if __name__ == "__main__":
    trainer.main(steps=4)
