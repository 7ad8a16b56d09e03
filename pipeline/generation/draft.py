"""The mutable working state of one task while it is drawn, repaired and certified."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from domains import Domain
from gridbench_core.task import GlobalRule, SlotRule, Value

Cell = tuple[int, int]
Record = dict[str, Value]


@dataclass
class Bound:
    """One bound of a draft: its rules (bounds not yet set; a window's two in their listed
    order), its radius and its offset draw (how they become the shown rules:
    :mod:`pipeline.generation.bounds`)."""

    rules: tuple[GlobalRule, ...]
    radius: int
    offset: float
    drawn: int = -1  # the radius as first drawn (set in __post_init__); loosening never passes it

    def __post_init__(self) -> None:
        if self.drawn < 0:
            self.drawn = self.radius

    @property
    def window(self) -> bool:
        """Whether the bound is a window (two rules) rather than one-sided."""
        return len(self.rules) == 2

    @property
    def upper(self) -> bool:
        """A one-sided cap (``sum_max``, ``repeat_max``, ``count_max``)."""
        return self.rules[0].is_upper_bound


@dataclass
class Draft:
    """One task under construction. ``truth`` holds an id for every cell."""

    domain: Domain
    rows: int
    cols: int
    rng: random.Random
    label_rng: random.Random = field(default_factory=random.Random)  # ids and names only
    truth: list[list[str]] = field(default_factory=list)
    items: dict[str, Record] = field(default_factory=dict)
    hidden: list[Cell] = field(default_factory=list)
    slot_rules: dict[Cell, list[SlotRule]] = field(default_factory=dict)
    rules: list[GlobalRule] = field(default_factory=list)  # as shown (generation/bounds.py)
    bounds: list[Bound] = field(default_factory=list)  # what the rules are derived from
    cages: list[tuple[Cell, ...]] = field(default_factory=list)  # regions with their own windows
    decoys: dict[Cell, list[str]] = field(default_factory=dict)
    filtered: dict[Cell, list[str]] = field(default_factory=dict)
    _used_ids: set[str] = field(default_factory=set)

    def new_item(self, attributes: Record) -> str:
        """Give ``attributes`` a fresh random id and name; return the id. Ids and names come
        from their own generator, so that what an agent sees of them says nothing about the
        stream the values and the truth were drawn from."""
        labels, prefix, used = self.label_rng, self.domain.id_prefix, self._used_ids
        item_id = f"{prefix}{labels.getrandbits(24):06x}"
        while item_id in used:
            item_id = f"{prefix}{labels.getrandbits(24):06x}"
        used.add(item_id)
        self.items[item_id] = {"id": item_id, "name": self._name(labels), **attributes}
        return item_id

    @functools.cached_property
    def _name(self) -> Callable[[random.Random], str]:
        """The domain's :meth:`~domains.Domain.name_drawer`, found once for the draft's items."""
        return self.domain.name_drawer()

    def drop_item(self, item_id: str) -> None:
        """Forget the item ``item_id`` (nothing happens when it is unknown)."""
        self.items.pop(item_id, None)

    def truth_record(self, cell: Cell) -> Record:
        """The record of the truth item in ``cell``."""
        return self.items[self.truth[cell[0]][cell[1]]]

    def cells(self) -> list[Cell]:
        """Every cell of the grid, in row-major order."""
        return [(r, c) for r in range(self.rows) for c in range(self.cols)]
