"""The uniform item sampler draws exactly what each attribute's own ``sample`` draws, from the
same stream (it calls ``random``'s ``_randbelow`` directly, as ``randint`` and ``choice`` do):
same values, same state after, for every domain and for hand-made attributes at the edges."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domains import CategoricalAttribute, NumericAttribute, domain_names, get_domain
from domains.base import uniform_sampler


def _by_sample(attributes, rng: random.Random) -> dict:  # type: ignore[no-untyped-def]
    return {attribute.name: attribute.sample(rng) for attribute in attributes}


class _Sub(random.Random):
    """A subclass: ``random`` keeps ``_randbelow_with_getrandbits`` for it."""


class _OwnRandom(random.Random):
    """A subclass with its own ``random()``: ``random`` then draws below ``n`` from ``random()``
    (``_randbelow_without_getrandbits``), which the sampler must ask for, not write out."""

    def random(self) -> float:
        return super().random()


GENERATORS = [random.Random, _Sub, _OwnRandom]


def _same_stream(ours_draw, theirs_draw, make=random.Random) -> None:  # type: ignore[no-untyped-def]
    """Over 50 seeds, 20 draws each: the same values, and the same generator state after."""
    for seed in range(50):
        ours, theirs = make(seed), make(seed)
        for _ in range(20):
            assert ours_draw(ours) == theirs_draw(theirs)
        assert ours.getstate() == theirs.getstate()


@pytest.mark.parametrize("make", GENERATORS)
@pytest.mark.parametrize("name", domain_names())
def test_every_domain_draws_what_its_attributes_draw(name, make):
    domain = get_domain(name)
    _same_stream(
        lambda rng: uniform_sampler(domain, rng), lambda rng: _by_sample(domain.attributes, rng), make
    )


class _Domain:
    def __init__(self, attributes: tuple) -> None:  # type: ignore[type-arg]
        self.attributes = attributes


@given(
    st.lists(
        st.one_of(
            st.tuples(st.integers(-(2**70), 2**70), st.integers(0, 2**70)).map(
                lambda pair: NumericAttribute("n", pair[0], pair[0] + pair[1])
            ),
            st.lists(st.text(max_size=3), min_size=1, max_size=300).map(
                lambda values: CategoricalAttribute("c", tuple(values))
            ),
        ),
        min_size=1,
        max_size=6,
    ).map(
        lambda attributes: tuple(
            a.__class__(f"a{k}", *list(vars(a).values())[1:]) for k, a in enumerate(attributes)
        )
    ),
    st.integers(0, 2**64),
    st.sampled_from(GENERATORS),
)
def test_edge_ranges_draw_the_same_values_and_leave_the_same_state(attributes, seed, make):
    """Single-value ranges, ranges past 2**64, one-value and long categorical lists."""
    domain = _Domain(attributes)
    ours, theirs = make(seed), make(seed)
    for _ in range(5):
        assert uniform_sampler(domain, ours) == _by_sample(attributes, theirs)  # type: ignore[arg-type]
    assert ours.getstate() == theirs.getstate()


def test_an_empty_range_is_refused_as_randint_refuses_it():
    domain = _Domain((NumericAttribute("n", 5, 4),))
    with pytest.raises(ValueError, match="empty range"):
        uniform_sampler(domain, random.Random(0))  # type: ignore[arg-type]


@pytest.mark.parametrize("make", GENERATORS)
@pytest.mark.parametrize("name", domain_names())
def test_names_draw_what_choice_and_randint_draw(name, make):
    domain = get_domain(name)
    _same_stream(
        domain.sample_name, lambda rng: f"{rng.choice(domain.name_words)} {rng.randint(100, 999)}", make
    )


@pytest.mark.parametrize("make", GENERATORS)
@pytest.mark.parametrize("name", domain_names())
def test_the_drawers_draw_what_sample_item_and_sample_name_draw(name, make):
    """The one-call drawers a writer of many items uses: the same values and the same state,
    with the domain's own sampler too (a domain may replace the uniform one)."""
    import dataclasses

    domain = get_domain(name)
    _same_stream(domain.item_drawer(), domain.sample_item, make)
    _same_stream(domain.name_drawer(), domain.sample_name, make)

    def skewed(domain, rng):  # type: ignore[no-untyped-def]
        return {**uniform_sampler(domain, rng), "extra": rng.random()}

    own = dataclasses.replace(domain, sampler=skewed)
    _same_stream(own.item_drawer(), own.sample_item, make)
    unnamed = dataclasses.replace(domain, name_words=())
    with pytest.raises(IndexError):
        unnamed.name_drawer()(make(0))


@given(st.integers(0, 2**64), st.lists(st.integers(-5, 120), max_size=4))
def test_a_cell_s_passing_draw_is_randint_s_draw(seed, bounds):
    """Every slot rule of a domain, with thresholds inside, at and past the natural range;
    the values re-drawn inside the allowed range are randint's, and so is the state after."""
    from gridbench_core.task import SlotRule
    from pipeline.generation.sample import allowed_range, passing_sampler

    domain = get_domain("course")
    rules = [SlotRule(t.attribute, t.op, value) for t, value in zip(domain.slot_rules, bounds, strict=False)]
    ranges = [(rule.attribute, *allowed_range(domain, rule.attribute, rules)) for rule in rules]

    def reference(rng: random.Random) -> dict:
        record = domain.sample_item(rng)
        for name, low, high in ranges:
            if not (isinstance(record[name], int) and low <= record[name] <= high):
                record[name] = rng.randint(low, high)
        return record

    ours, theirs = random.Random(seed), random.Random(seed)
    draw = passing_sampler(domain, rules)
    for _ in range(5):
        try:
            expected = reference(theirs)
        except ValueError as error:
            with pytest.raises(ValueError, match="empty range"):
                draw(ours)
            assert "empty range" in str(error)
            return
        assert draw(ours) == expected
    assert ours.getstate() == theirs.getstate()


def test_a_cell_without_slot_rules_draws_no_filtered_item_and_refuses_one():
    """As ``choice(rules)`` did: nothing to draw is no error, one item to draw is choice's."""
    from pipeline.generation.candidates import draw_filtered
    from pipeline.generation.draft import Draft

    draft = Draft(get_domain("course"), 2, 2, random.Random(0))
    draft.slot_rules[(0, 0)] = []
    draw_filtered(draft, (0, 0), 0)
    assert draft.filtered[(0, 0)] == []
    with pytest.raises(IndexError, match="empty sequence"):
        draw_filtered(draft, (0, 0), 1)


@given(
    st.integers(0, 2**64),
    st.lists(st.integers(-5, 120), min_size=1, max_size=4),
    st.integers(0, 30),
    st.sampled_from(["course", "meal", "travel"]),
)
def test_filtered_items_written_out_are_the_general_loop_s_items(seed, bounds, count, name):
    """``draw_filtered`` writes its draws out for a ``random.Random`` and a uniform sampler; a
    subclass (which may draw otherwise) takes the general loop of the passing sampler and
    ``_randbelow``. With the same seed both make the same items, ids and names, and leave both
    generators in the same state; a range left empty is randint's refusal in both."""
    from gridbench_core.task import SlotRule
    from pipeline.generation.candidates import draw_filtered
    from pipeline.generation.draft import Draft

    domain = get_domain(name)
    rules = [SlotRule(t.attribute, t.op, value) for t, value in zip(domain.slot_rules, bounds, strict=False)]
    outcomes = []
    for make in (random.Random, _Sub):
        draft = Draft(domain, 2, 2, make(seed), make(seed + 1))
        draft.slot_rules[(0, 1)] = rules
        try:
            draw_filtered(draft, (0, 1), count)
        except ValueError as error:
            outcomes.append(("refused", str(error)))
            continue
        outcomes.append((draft.filtered, draft.items, draft.rng.getstate(), draft.label_rng.getstate()))
    assert outcomes[0] == outcomes[1]
    if outcomes[0][0] != "refused":
        assert len(outcomes[0][0][(0, 1)]) == count
