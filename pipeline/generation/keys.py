"""Task keys, generation settings, and the seeded generators derived from them."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field, fields, is_dataclass

from domains import get_domain
from gridbench_core.errors import UserError
from solvers.ladder import RUNGS

ALLOCATION_POLICIES = ("paper", "spread", "concentrated")
ROOM_OVER_BUDGET = 2  # the paper's K = max(candidates_per_slot, B + 2)


def candidates_for(candidates_per_slot: int, room_over_budget: int | None, budget: int) -> int:
    """K, the candidates of a hidden cell: ``max(candidates_per_slot, B + room_over_budget)``
    (the paper's rule, room 2), or ``candidates_per_slot`` at every B when the room is None
    (large budgets: B = 600 on 20x20 keeps K = 25). The one place this rule lives."""
    if room_over_budget is None:
        return candidates_per_slot
    return max(candidates_per_slot, budget + room_over_budget)


CROSSCHECK_SOLVERS = ("highs", "cbc")

# The version of the draw: what a key gives changes with it (the task cache's format, and what a
# training shard records). 2: the draw of release 2.0.0 (issue 26); 3: dfs_nodes over the whole
# tree; 4: travel's grid windows on duration and crowd level (a461e92), which a cache of format 3
# served as the old travel tasks; a domain's own definition (:func:`domain_fingerprint`) is read
# beside it since
GENERATOR_FORMAT = "gridbench-cache-4"


_DOMAIN_PRINTS: dict[str, tuple[object, str]] = {}


def domain_fingerprint(name: str) -> str:
    """A digest of the registered domain ``name``'s whole definition (its sampler by name),
    worked out once per domain object."""
    domain = get_domain(name)
    known = _DOMAIN_PRINTS.get(name)
    if known is not None and known[0] is domain:
        return known[1]
    text = json.dumps(
        {part.name: getattr(domain, part.name) for part in fields(domain)},
        sort_keys=True,
        default=_plain,
    )
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    _DOMAIN_PRINTS[name] = (domain, digest)
    return digest


def _plain(value: object) -> object:
    """A domain's parts as JSON: a dataclass as its fields (with its type's name), a function
    as its qualified name."""
    if is_dataclass(value) and not isinstance(value, type):
        return {"type": type(value).__name__, **{f.name: getattr(value, f.name) for f in fields(value)}}
    if callable(value):
        return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', repr(value))}"
    raise TypeError(f"a domain holds a {type(value).__name__}, which the cache cannot fingerprint")


class GenerationError(UserError):
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
    salt: str = field(default="", repr=False)  # secret: mixed into every draw, never written

    def public(self) -> dict[str, int | str]:
        """The key's fields without the secret salt (what files may record)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "salt"}

    def canonical(self) -> str:
        """The key as ``name=value`` text in a fixed order, with the salt when there is one."""
        text = "|".join(f"{k}={v}" for k, v in sorted(self.public().items()))
        return text + (f"|salt={self.salt}" if self.salt else "")

    def digest(self, *salt: object) -> bytes:
        """The SHA-256 digest of the canonical key followed by the extra parts ``salt``."""
        text = self.canonical() + "|" + "|".join(str(s) for s in salt)
        return hashlib.sha256(text.encode("utf-8")).digest()

    def rng(self, *salt: object) -> random.Random:
        """A generator seeded by a hash of the key (never by Python's ``hash``)."""
        return random.Random(int.from_bytes(self.digest(*salt)[:8], "big"))

    @property
    def task_id(self) -> str:
        """The task's id: the domain and 12 hex digits of the key's digest."""
        return f"{self.domain}-{self.digest('task_id').hex()[:12]}"


@dataclass(frozen=True)
class GenerationSettings:
    """How tasks are drawn and certified (defaults follow the paper where it says)."""

    allocation: str = "paper"  # paper | spread | concentrated
    min_margin: int = 1  # loosening any one bound by < min_margin units keeps the answer unique
    max_slot_rules: int = 3
    # a grid window's initial width (its radius, generation/bounds.py): uniform in 0..2 x this
    # share of one item's range
    window_slack_share: float = 0.1
    # a one-sided bound's radius: this many standard deviations of its measure over random
    # completions (its slack then spreads over what the other completions cover). The truth's
    # slack never exceeds it, and anyone can compute it from the task, so a reader that drops
    # completions with more slack gains on it: 5x5, +0.039 over reading the bound alone at 4,
    # +0.024 at 8, +0.015 at 12 (docs/difficulty.md)
    one_sided_spread: float = 12.0
    # a window narrowed by repair, or widened by loosening, stops one unit short of another
    # completion: its radius then says that some completion lies exactly one unit outside the
    # truth's box, which a reader of the widths alone found (+0.05 over chance at the default,
    # +0.42 with min_depth=fixpoint). Its radius is drawn uniformly between (1 - width_jitter)
    # times that edge and the edge: +0.024 and +0.114 at 0.5; at 1 windows of width 0..2 put
    # the truth in the middle fifth of its windows too often for the audit (docs/difficulty.md)
    width_jitter: float = 0.5
    max_repair_rounds: int = 40
    # a task whose decoys allow more than about 2**cage_bits completions lays its decoy cells
    # on a ring of overlapping cages of cage_cells cells, each with windows on cage_attributes
    # numeric attributes (generation/cages.py): the domain's few sums cannot make so many
    # exchangeable decoys unique
    cage_bits: float = 16.0
    cage_cells: int = 3
    cage_attributes: int = 1
    cage_spread: float = 1.0  # a cage window's initial radius: up to this many deviations of its total
    # once a caged draft is unique, loosen each of its windows as far as uniqueness allows (its
    # repair cuts deep to converge; the cages are then as loose as they can be)
    cage_loosen: bool = True
    max_attempts: int = 8  # whole-task re-draws, the last resort
    min_resistant_share: float = 0.0  # share of decoys that must survive interval propagation
    # the lowest rung of the reasoning ladder (solvers/ladder.py: slot, one_round, fixpoint,
    # probing, search) that may decide a task: bounds are loosened (or the task re-drawn) until
    # no lower rung does; capped at what a task's decoys allow (resist.depth_target)
    min_depth: str = "slot"
    resistance_attempts: int = 200  # whole-task re-draws allowed when min_resistant_share > 0
    time_limit_s: float = 10.0  # per solve, in CP-SAT deterministic time (build.WALL_BACKSTOP)
    solver_workers: int = 1  # >1 only for benchmarks: parallel search makes output non-deterministic
    dfs_node_limit: int = 50_000
    crosscheck: bool = False
    crosscheck_solver: str = "highs"  # highs | cbc: the independent MILP cross-check
    settle_limit: int = 200_000  # completions enumerated to settle a solver disagreement

    @property
    def attempts(self) -> int:
        """Whole-task draws allowed: more when a resistant share is asked for (measured: a
        B=2 task needs up to about 100 draws for one resistant decoy in two)."""
        demanding = self.min_resistant_share or self.min_depth not in ("slot", "one_round")
        return max(self.max_attempts, self.resistance_attempts) if demanding else self.max_attempts

    def validate(self) -> None:
        """Raise :class:`GenerationError` naming the first setting out of range."""
        if self.allocation not in ALLOCATION_POLICIES:
            raise GenerationError(
                f"allocation={self.allocation!r} is unknown; use one of {ALLOCATION_POLICIES}"
            )
        if self.min_margin < 1:
            raise GenerationError(f"min_margin={self.min_margin} must be >= 1 (1 = unique)")
        if not 1 <= self.max_slot_rules <= 3:
            raise GenerationError(f"max_slot_rules={self.max_slot_rules} must be in 1..3")
        if self.max_repair_rounds < 0 or self.max_attempts < 1 or self.resistance_attempts < 1:
            raise GenerationError("max_repair_rounds must be >= 0, max_attempts and resistance_attempts >= 1")
        limit = self.time_limit_s
        if isinstance(limit, bool) or not isinstance(limit, int | float) or not 0 < limit < float("inf"):
            raise GenerationError(f"time_limit_s={self.time_limit_s} must be a finite number > 0")
        for name in ("window_slack_share", "min_resistant_share", "width_jitter"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
                raise GenerationError(f"{name}={value!r} must be a number between 0 and 1")
        for name in ("one_sided_spread", "cage_spread"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 100.0:
                raise GenerationError(f"{name}={value!r} must be a number between 0 and 100")
        bits = self.cage_bits
        if isinstance(bits, bool) or not isinstance(bits, int | float) or not 0.0 <= bits <= 10_000.0:
            raise GenerationError(f"cage_bits={bits!r} must be a number between 0 and 10000")
        if (
            isinstance(self.cage_cells, bool)
            or not isinstance(self.cage_cells, int)
            or not 1 <= self.cage_cells <= 8
        ):
            raise GenerationError(f"cage_cells={self.cage_cells!r} must be a whole number in 1..8")
        if not isinstance(self.cage_loosen, bool):
            raise GenerationError(f"cage_loosen={self.cage_loosen!r} must be true or false")
        count = self.cage_attributes
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 8:
            raise GenerationError(f"cage_attributes={count!r} must be a whole number in 1..8")
        for name in (
            "max_repair_rounds",
            "max_attempts",
            "resistance_attempts",
            "dfs_node_limit",
            "settle_limit",
            "min_margin",
            "max_slot_rules",
            "solver_workers",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10**9:
                raise GenerationError(f"{name}={value!r} must be a whole number in 0..10**9")
        if self.min_depth not in RUNGS:
            raise GenerationError(f"min_depth={self.min_depth!r} is unknown; use one of {list(RUNGS)}")
        if self.crosscheck_solver not in CROSSCHECK_SOLVERS:
            raise GenerationError(
                f"crosscheck_solver={self.crosscheck_solver!r} is unknown; use one of {CROSSCHECK_SOLVERS}"
            )
