"""A release is the same bytes as before the code moved: the deterministic files of a small
release (tasks, answers, data tables, metadata, schemas, card, licence) have the SHA-256
digests recorded in tests/data/small_release_digests.json, re-recorded for release 2.0.0 when
issue 26 changed the draw (bounds without a tell, cages on a ring; the same digests with one
worker and with two); the card's last line re-recorded when the commands moved to
gridbench/commands/ (the module it names); re-recorded when one-sided bounds were widened
(``one_sided_spread`` 4 -> 12: their far side told the truth's slack, docs/difficulty.md); the
card re-recorded when the audit's intervals became Wilson's and its verdict judged the
rule-free readers together (docs/integrity.md); answers, tables, schema and card re-recorded
when ``dfs_nodes`` came to count the canonical search's whole tree (to its first completion
it told the truth's place among the listed candidates, docs/tasks.md); the metadata when it
lost ``distance_rule`` and ``distance_share`` (which named the side of a bound the truth keeps,
docs/release.md). A change that alters a
release must update the file on purpose, and say why in its commit."""

from __future__ import annotations

import hashlib
import json

from pipeline.storage.layout import DETERMINISTIC
from tests import ROOT
from tests.helpers_release import build_small

GOLDEN = ROOT / "tests" / "data" / "small_release_digests.json"


def test_a_small_release_is_byte_identical_to_the_recorded_one(tmp_path):
    release = build_small(tmp_path, "golden", workers=1)
    digests = {}
    for path in sorted(release.rglob("*")):
        relative = path.relative_to(release).as_posix()
        if path.is_file() and any(relative == d or relative.startswith(d) for d in DETERMINISTIC):
            digests[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    expected = json.loads(GOLDEN.read_text())
    assert sorted(digests) == sorted(expected)
    changed = sorted(name for name in expected if digests[name] != expected[name])
    assert not changed, f"these files of the release changed: {changed}"
