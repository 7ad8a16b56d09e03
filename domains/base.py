"""Domain description: attribute schema, item sampler, rule vocabulary and prompt nouns.

A domain is plain data. It never imports a solver. The generator in ``pipeline/`` reads a
:class:`Domain` and nothing else, so adding a domain never touches ``solvers/`` or
``pipeline/``.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from gridbench_core.errors import UserError
from gridbench_core.vocabulary import NUMERIC_SLOT_OPS, RuleKind, Scope

Value = int | str

SLOT_OPS = NUMERIC_SLOT_OPS  # the slot rules a domain draws: <= and >= on numbers
GLOBAL_KINDS = tuple(RuleKind)
SCOPES = (Scope.GRID, Scope.ROW, Scope.COL)  # a domain's rules never name cells


class DomainError(UserError):
    """A domain definition is inconsistent (raised when the domain is registered)."""


@dataclass(frozen=True)
class NumericAttribute:
    """An integer attribute drawn from the closed range [low, high]."""

    name: str
    low: int
    high: int

    def sample(self, rng: random.Random) -> int:
        """A uniform draw from [low, high]."""
        return rng.randint(self.low, self.high)


@dataclass(frozen=True)
class CategoricalAttribute:
    """A categorical attribute with a fixed, ordered list of values."""

    name: str
    values: tuple[str, ...]

    def sample(self, rng: random.Random) -> str:
        """A uniform draw from ``values``."""
        return rng.choice(self.values)


Attribute = NumericAttribute | CategoricalAttribute


@dataclass(frozen=True)
class SlotRuleTemplate:
    """A slot rule family, e.g. ``max_price`` = ``price <= v`` with v drawn per cell."""

    name: str
    attribute: str
    op: str  # "<=" or ">="


@dataclass(frozen=True)
class GlobalRuleTemplate:
    """A global rule family; the generator chooses its bound from the truth grid."""

    name: str
    kind: str
    attribute: str
    scope: str = "grid"
    equals: str | None = None  # count_min / count_max
    at_least: int | None = None  # count_min_threshold


ItemSampler = Callable[["Domain", random.Random], dict[str, Value]]


def uniform_sampler(domain: Domain, rng: random.Random) -> dict[str, Value]:
    """Draw every attribute independently from its natural range: what each attribute's
    ``sample`` draws, from the same stream (``randint(low, high)`` is ``low +
    _randbelow(high - low + 1)`` and ``choice(values)`` is ``values[_randbelow(len(values))]``
    in CPython's ``random``; tests/pipeline/generation/test_sampling_stream.py holds it to that),
    without their call layers: the generator's hottest draw. For a ``random.Random`` itself,
    ``_randbelow`` (``_randbelow_with_getrandbits``: ``getrandbits(n.bit_length())`` until the
    draw is below ``n``) is written out here; a subclass, which may draw otherwise, is asked."""
    return _draw(_plan_of(domain.attributes), rng)


def uniform_plan(domain: Domain) -> Plan | None:
    """The plan :func:`uniform_sampler` draws ``domain``'s items by, for a caller that writes
    its draws out (None when the domain has a sampler of its own)."""
    return _plan_of(domain.attributes) if domain.sampler is uniform_sampler else None


def _draw(plan: Plan, rng: random.Random) -> dict[str, Value]:
    """One value per entry of ``plan``, drawn as :func:`uniform_sampler` says."""
    if type(rng) is not random.Random:
        below = rng._randbelow  # type: ignore[attr-defined]
        return {
            name: low + below(width) if values is None else values[below(width)]
            for name, low, width, values, _ in plan
        }
    getrandbits = rng.getrandbits
    record: dict[str, Value] = {}
    for name, low, width, values, bits in plan:
        drawn = getrandbits(bits)
        while drawn >= width:
            drawn = getrandbits(bits)
        record[name] = low + drawn if values is None else values[drawn]
    return record


Plan = tuple[tuple[str, int, int, "tuple[str, ...] | None", int], ...]
_PLANS: dict[int, tuple[tuple[Attribute, ...], Plan]] = {}


def _plan_of(attributes: tuple[Attribute, ...]) -> Plan:
    """:func:`_draw_plan` of these very attributes (remembered by identity, and kept alive)."""
    known = _PLANS.get(id(attributes))
    if known is None or known[0] is not attributes:
        known = _PLANS[id(attributes)] = (attributes, _draw_plan(attributes))
    return known[1]


@functools.cache
def _name_plan(words: tuple[str, ...]) -> Plan:
    """A name's draws as a plan: ``choice(words)``, then ``randint(100, 999)``."""
    return (("word", 0, len(words), words, len(words).bit_length()), ("number", 100, 900, None, 10))


def _draw_plan(attributes: tuple[Attribute, ...]) -> Plan:
    """Per attribute: its name, the lowest value, how many values, the values of a categorical
    one (None for a numeric one), and the bits ``_randbelow`` draws for that many values."""
    plan: list[tuple[str, int, int, tuple[str, ...] | None, int]] = []
    for attribute in attributes:
        if isinstance(attribute, NumericAttribute):
            if attribute.high < attribute.low:  # what randint would refuse
                raise ValueError(f"empty range for randrange({attribute.low}, {attribute.high + 1})")
            width = attribute.high - attribute.low + 1
            plan.append((attribute.name, attribute.low, width, None, width.bit_length()))
        else:
            if not attribute.values:
                raise IndexError("Cannot choose from an empty sequence")
            width = len(attribute.values)
            plan.append((attribute.name, 0, width, attribute.values, width.bit_length()))
    return tuple(plan)


@dataclass(frozen=True)
class Domain:
    """Everything the generator needs to know about one planning domain."""

    name: str
    item_noun: str  # "course"
    item_plural: str  # "courses"
    id_prefix: str  # "C"
    task_phrase: str  # "course scheduling"
    row_noun: str  # "day"
    col_noun: str  # "class period"
    attributes: tuple[Attribute, ...]
    slot_rules: tuple[SlotRuleTemplate, ...]
    global_rules: tuple[GlobalRuleTemplate, ...]
    name_words: tuple[str, ...]
    sampler: ItemSampler = field(default=uniform_sampler)

    def attribute(self, name: str) -> Attribute:
        """The attribute called ``name``; :class:`DomainError` when there is none."""
        for attribute in self.attributes:
            if attribute.name == name:
                return attribute
        raise DomainError(f"domain {self.name!r} has no attribute {name!r}")

    def numeric(self, name: str) -> NumericAttribute:
        """The numeric attribute called ``name``; :class:`DomainError` when it is missing or categorical."""
        attribute = self.attribute(name)
        if not isinstance(attribute, NumericAttribute):
            raise DomainError(f"attribute {name!r} of domain {self.name!r} is not numeric")
        return attribute

    def sample_item(self, rng: random.Random) -> dict[str, Value]:
        """A new item's attribute values, drawn with the domain's sampler."""
        return self.sampler(self, rng)

    def item_drawer(self) -> Callable[[random.Random], dict[str, Value]]:
        """:meth:`sample_item` as one call, for a caller that draws many items: the same draws
        from the same stream, without the sampler's call layers."""
        plan = uniform_plan(self)
        if plan is not None:
            return functools.partial(_draw, plan)
        return functools.partial(self.sampler, self)

    def name_drawer(self) -> Callable[[random.Random], str]:
        """:meth:`sample_name` for a caller that names many items (its plan found once)."""
        if not self.name_words:
            return self.sample_name  # its refusal, where a name is drawn
        plan = _name_plan(tuple(self.name_words))
        (_, _, count, words, bits), (_, lowest, numbers, _, number_bits) = plan

        def name(rng: random.Random) -> str:
            if type(rng) is not random.Random:
                drawn = _draw(plan, rng)
                return f"{drawn['word']} {drawn['number']}"
            # the plan's two draws written out (one name an item: its dict was a cost of its own)
            getrandbits = rng.getrandbits
            word = getrandbits(bits)
            while word >= count:
                word = getrandbits(bits)
            number = getrandbits(number_bits)
            while number >= numbers:
                number = getrandbits(number_bits)
            return f"{words[word]} {lowest + number}"  # type: ignore[index]

        return name

    def sample_name(self, rng: random.Random) -> str:
        """A name with no order in it: a random word and a random number (``choice(words)``
        then ``randint(100, 999)``, drawn as :func:`uniform_sampler` draws: one name per item,
        so their call layers were a cost of their own)."""
        if not self.name_words:
            raise IndexError("Cannot choose from an empty sequence")
        drawn = _draw(_name_plan(tuple(self.name_words)), rng)
        return f"{drawn['word']} {drawn['number']}"

    def validate(self) -> None:
        """Raise :class:`DomainError` naming the first inconsistency."""
        names = [attribute.name for attribute in self.attributes]
        if len(set(names)) != len(names):
            raise DomainError(f"domain {self.name!r} repeats an attribute name: {names}")
        reserved = {"id", "name"} & set(names)
        if reserved:
            raise DomainError(f"domain {self.name!r} uses reserved attribute names {reserved}")
        for attribute in self.attributes:
            if isinstance(attribute, NumericAttribute) and not 0 <= attribute.low < attribute.high:
                raise DomainError(
                    f"{self.name}.{attribute.name}: need 0 <= low < high, got "
                    f"[{attribute.low}, {attribute.high}] (sums are judged on partial grids, "
                    "so values must be non-negative)"
                )
        for slot_rule in self.slot_rules:
            self.numeric(slot_rule.attribute)
            if slot_rule.op not in SLOT_OPS:
                raise DomainError(f"{self.name}.{slot_rule.name}: op must be one of {SLOT_OPS}")
        self._validate_global_rules()
        if not self.slot_rules or not self.global_rules:
            raise DomainError(f"domain {self.name!r} needs slot rules and global rules")

    def _validate_global_rules(self) -> None:
        for rule in self.global_rules:
            where = f"{self.name}.{rule.name}"
            if rule.kind not in GLOBAL_KINDS:
                raise DomainError(f"{where}: unknown rule kind {rule.kind!r}; known: {GLOBAL_KINDS}")
            if rule.scope not in SCOPES:
                raise DomainError(f"{where}: unknown scope {rule.scope!r}; known: {SCOPES}")
            attribute = self.attribute(rule.attribute)
            numeric_kinds = (RuleKind.SUM_MAX, RuleKind.SUM_MIN, RuleKind.COUNT_MIN_THRESHOLD)
            if rule.kind in numeric_kinds and not isinstance(attribute, NumericAttribute):
                raise DomainError(f"{where}: {rule.kind} needs a numeric attribute")
            if rule.kind in (RuleKind.COUNT_MIN, RuleKind.COUNT_MAX):
                if not isinstance(attribute, CategoricalAttribute):
                    raise DomainError(f"{where}: {rule.kind} needs a categorical attribute")
                if rule.equals not in attribute.values:
                    raise DomainError(f"{where}: equals={rule.equals!r} is not a value")
            if rule.kind == RuleKind.REPEAT_MAX and not isinstance(attribute, CategoricalAttribute):
                raise DomainError(f"{where}: repeat_max needs a categorical attribute")
            if rule.kind == RuleKind.COUNT_MIN_THRESHOLD and rule.at_least is None:
                raise DomainError(f"{where}: count_min_threshold needs at_least")
