"""The README's Python examples run as written (against a small release at the README's path)."""

from __future__ import annotations

import re

import pytest

from tests import ROOT
from tests.helpers_release import compose_config

SECTIONS = (
    "## Using a release from Python",
    "**Releases that travel.**",
    "## Playing from other harnesses",
)


def _blocks(heading: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return re.findall(r"```python\n(.*?)```", text[start : end if end > 0 else None], re.DOTALL)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    from pipeline.release import build

    root = tmp_path_factory.mktemp("readme")
    cfg = compose_config(
        [
            "release.domains=[course,meal]",
            "grid.hidden_slots=[5,7]",
            "grid.decoy_budgets=[0,4]",
            f"release.output_root={root}/outputs/releases",
            f"release.cache_root={root}/cells",
        ]
    )
    assert build(cfg) == 0
    return root


@pytest.mark.parametrize("heading", SECTIONS)
def test_the_readme_examples_run(heading, workdir, monkeypatch):
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("HF_HOME", str(workdir / "hf"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    blocks = _blocks(heading)
    assert blocks, heading
    namespace: dict = {"__name__": "__main__"}
    for block in blocks:
        exec(compile(block, f"README {heading}", "exec"), namespace)
    if "record" in namespace:
        assert namespace["gridbench"].score(namespace["record"].task, namespace["grid"])["success"]
    if "made" in namespace:
        assert [item.index for item in namespace["made"]] == [0, 1, 2, 3]
