"""Task keys, generation settings, and the seeded generators derived from them."""

from __future__ import annotations

import hashlib
import random
from dataclasses import asdict, dataclass

ALLOCATION_POLICIES = ("paper", "spread", "concentrated")


class GenerationError(ValueError):
    """A task key or a generation setting cannot work; the message names it and the limit."""


@dataclass(frozen=True)
class TaskKey:
    """Everything that identifies one task. Task i of a release is a pure function of this."""

    domain: str
    rows: int
    cols: int
    hidden_slots: int
    decoy_budget: int
    candidates_per_slot: int
    seed: int = 0
    index: int = 0

    def canonical(self) -> str:
        return "|".join(f"{k}={v}" for k, v in sorted(asdict(self).items()))

    def digest(self, *salt: object) -> bytes:
        text = self.canonical() + "|" + "|".join(str(s) for s in salt)
        return hashlib.sha256(text.encode("utf-8")).digest()

    def rng(self, *salt: object) -> random.Random:
        """A generator seeded by a hash of the key (never by Python's ``hash``)."""
        return random.Random(int.from_bytes(self.digest(*salt)[:8], "big"))

    @property
    def task_id(self) -> str:
        return f"{self.domain}-{self.digest('task_id').hex()[:12]}"


@dataclass(frozen=True)
class GenerationSettings:
    """How tasks are drawn and certified (defaults follow the paper where it says)."""

    allocation: str = "paper"  # paper | spread | concentrated
    min_margin: int = 1  # loosening any one bound by < min_margin units keeps the answer unique
    max_slot_rules: int = 3
    sum_slack_share: float = 0.15  # slack of sum bounds: up to this share of one item's range
    count_slack_probability: float = 0.3  # chance that a count bound gets one unit of slack
    max_repair_rounds: int = 40
    tighten_from_round: int = 4  # from this repair round on, a bound may be tightened
    max_attempts: int = 8  # whole-task re-draws, the last resort
    temptation: float = 0.4  # chance a decoy beats the truth on each summed attribute it spares
    prefer_deep_decoys: bool = True  # avoid decoys refuted by one partial check when H >= 2
    time_limit_s: float = 10.0
    solver_workers: int = 1  # >1 only for benchmarks: parallel search makes output non-deterministic
    dfs_node_limit: int = 50_000
    crosscheck: bool = False

    def validate(self) -> None:
        if self.allocation not in ALLOCATION_POLICIES:
            raise GenerationError(
                f"allocation={self.allocation!r} is unknown; use one of {ALLOCATION_POLICIES}"
            )
        if self.min_margin < 1:
            raise GenerationError(f"min_margin={self.min_margin} must be >= 1 (1 = unique)")
        if not 1 <= self.max_slot_rules <= 3:
            raise GenerationError(f"max_slot_rules={self.max_slot_rules} must be in 1..3")
        if self.max_repair_rounds < 0 or self.max_attempts < 1:
            raise GenerationError("max_repair_rounds must be >= 0 and max_attempts >= 1")
        if self.time_limit_s <= 0:
            raise GenerationError(f"time_limit_s={self.time_limit_s} must be > 0")
