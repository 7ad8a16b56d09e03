"""What the proofs and the measures of a task say, as frozen records (the answer file's
``certificate``, ``crosscheck`` and ``measures``). Reading one back checks that every field
without a default is there, so a renamed key is an error, never a silent 0."""

from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gridbench_core.errors import UserError

Record = TypeVar("Record")


def record_from(cls: type[Record], data: Any, where: str) -> Record:
    """``cls`` from a JSON object: missing required fields are an error naming them; nested
    records are read too; keys this code does not know are ignored."""
    if not isinstance(data, dict):
        raise UserError(f"{where}: must be a JSON object, got {type(data).__name__}")
    values = {}
    for name, required, nested in _plan(cls):  # type: ignore[arg-type]  # a class is hashable
        if name not in data:
            if required:
                raise UserError(f"{where}: missing field {name!r}")
            continue
        value = data[name]
        if nested is not None and value is not None:
            value = record_from(nested, value, f"{where}.{name}")
        elif name in ("failures",) and isinstance(value, list):
            value = tuple(str(v) for v in value)
        values[name] = value
    return cls(**values)


@functools.cache
def _plan(cls: type) -> tuple[tuple[str, bool, type | None], ...]:
    """Each field of the record class ``cls``: its name, whether it is required, the record
    class it nests (None for a plain value). Read once per class: resolving the annotations
    (strings here) was most of the cost of reading an answer back."""
    hints = typing.get_type_hints(cls)
    return tuple(
        (
            item.name,
            item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING,
            _record_type(hints[item.name]),
        )
        for item in dataclasses.fields(cls)
    )


def _record_type(hint: Any) -> type | None:
    """The record class a field holds (``X`` or ``X | None``), None for plain values."""
    for option in (hint, *typing.get_args(hint)):
        if dataclasses.is_dataclass(option) and isinstance(option, type):
            return option
    return None


@dataclass(frozen=True)
class Certificate:
    """CP-SAT's proofs: (a) ``truth_feasible``, (b) ``uniqueness`` INFEASIBLE, (c) every decoy
    refuted (``decoys_refuted`` INFEASIBLE), (d) every filtered item breaks its slot;
    ``ok`` when all hold. Generation adds where the task came from."""

    ok: bool
    solver: str
    solver_version: str
    solver_seed: int
    workers: int
    truth_feasible: str
    uniqueness: str
    decoys_refuted: str
    decoys_checked: int
    filtered_checked: int
    failures: tuple[str, ...] = ()
    seed: int | None = None
    index: int | None = None
    attempt: int = 0
    repair_rounds: int = 0
    tightenings: int = 0
    cell_redraws: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the answer file."""
        data = dataclasses.asdict(self)
        data["failures"] = list(self.failures)
        return data


@dataclass(frozen=True)
class CrossCheck:
    """The independent MILP's verdict: truth feasible, unique, and ``most_decoys_used`` (the
    most decoys a feasible completion can use: 0 proves them all wrong)."""

    solver: str
    solver_version: str
    truth_feasible: bool
    unique: bool
    decoys_infeasible: bool
    most_decoys_used: int | None
    statuses: dict[str, str]
    ok: bool
    counterexample: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the answer file (no ``counterexample`` key when there is none)."""
        data = dataclasses.asdict(self)
        if self.counterexample is None:
            data.pop("counterexample")
        return data


@dataclass(frozen=True)
class Distance:
    """The smallest loosening of one bound that admits a second completion (None: none does)."""

    units: int | None
    share: float | None
    rule: str | None


@dataclass(frozen=True)
class Resistance:
    """Decoys eliminated by one round of interval propagation, by its fixpoint, the resistant
    rest, the rounds it took, and whether it decides the whole task."""

    decoys: int
    one_round: int
    fixpoint: int
    resistant: int
    rounds: int
    decided: bool


@dataclass(frozen=True)
class Depth:
    """The lowest rung of the reasoning ladder that decides the task (``solvers.ladder``:
    0 slot, 1 one_round, 2 fixpoint, 3 probing, 4 search) and, per rung up to probing, the
    options beyond one per hidden cell that it leaves standing."""

    rung: int
    name: str
    open_after: list[int]


@dataclass(frozen=True)
class Effort:
    """The finer difficulty measures (``solvers.ladder``): the nodes of the complete search
    tree that propagation to the fixpoint leaves (1: the fixpoint decides; ``capped``: the
    count stopped at its limit) and ``joint_bits``, the options left, in bits, once the
    fixpoint and every region enumerated on its own have done what they can (what only
    reasoning across regions and rules removes)."""

    search_nodes: int
    search_capped: bool
    joint_bits: float


@dataclass(frozen=True)
class Measures:
    """The difficulty measures of a task (README: Difficulty measures)."""

    search_space: int
    log10_search_space: float
    shallow_decoys: int
    dfs_nodes: int
    dfs_capped: bool
    distance_to_ambiguity: Distance
    propagation: Resistance
    decoy_direction: dict[str, list[int]] = field(default_factory=dict)
    depth: Depth | None = None  # None in answers written before the ladder
    effort: Effort | None = None  # None in answers written before release 2

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the answer file (no ``depth`` or ``effort`` key when it was not
        measured)."""
        data = dataclasses.asdict(self)
        for name in ("depth", "effort"):
            if getattr(self, name) is None:
                data.pop(name)
        return data
