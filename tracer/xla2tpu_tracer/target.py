"""What the runner traces: one Target per profile file."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    library: str  # transformers | diffusers | timm
    name: str

    @property
    def id(self) -> str:
        return f"{self.library}/{self.name}"
