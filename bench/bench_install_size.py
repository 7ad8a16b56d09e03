"""Install size per extra, read off an installed environment: the files that each
distribution's RECORD lists, summed over the dependency closure of gridbench's core, and what
each extra adds on top of it (what ``pip install 'gridbench[EXTRA]'`` would put in a fresh venv
with the same versions; Python itself and pip not counted).

    .venv/bin/python bench/bench_install_size.py [EXTRA ...]
    .venv-verifiers/bin/python bench/bench_install_size.py --root verifiers

Nothing is downloaded: run it with the interpreter of an environment that has the extras
installed (``make install`` has all but ``train``'s torch, which the trainer brings). Prints
numbers; never fails.
"""

from __future__ import annotations

import argparse
import re
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

EXTRAS = ("openenv", "train", "adapters", "audit", "hub", "cluster")


def closure(roots: list[str]) -> set[str]:
    """Canonical names of the installed distributions that ``roots`` (requirement strings)
    need, extras followed; a requirement not installed is skipped (printed)."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in roots]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        extras = sorted(req.extras)
        key = f"{name}[{','.join(extras)}]"
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            print(f"  (not installed: {req})")
            continue
        seen.add(name)
        for text in dist.requires or []:
            sub = Requirement(text)
            if sub.marker is None:
                todo.append(sub)
                continue
            for extra in ["", *extras]:
                if sub.marker.evaluate({**default_environment(), "extra": extra}):
                    todo.append(sub)
                    break
    return {k for k in seen if "[" not in k}


def size_mb(name: str) -> float:
    dist = metadata.distribution(name)
    total = 0
    for file in dist.files or []:
        path = Path(str(dist.locate_file(file)))
        if path.is_file():
            total += path.stat().st_size
    return total / 1e6


def gridbench_requires(extra: str | None) -> list[str]:
    """gridbench's requirements (core, or one extra's own), from its installed metadata."""
    out = []
    for text in metadata.distribution("gridbench").requires or []:
        req = Requirement(text)
        marker = req.marker
        if extra is None and marker is None:
            out.append(str(Requirement(re.sub(r";.*", "", text))))
        elif extra is not None and marker is not None and marker.evaluate({"extra": extra}):
            out.append(re.sub(r";.*", "", text))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("extras", nargs="*", default=list(EXTRAS))
    parser.add_argument("--root", help="a distribution measured on top of the core (verifiers)")
    args = parser.parse_args()
    core = closure(gridbench_requires(None))
    core_mb = sum(size_mb(n) for n in core)
    print("| install | MB | distributions | largest additions |")
    print("|---|---|---|---|")
    print(f"| core | {core_mb:.0f} | {len(core)} | {largest(core)} |")
    for extra in [args.root] if args.root else args.extras:
        roots = [extra] if args.root else gridbench_requires(extra)
        if not roots:
            continue
        added = closure(roots) - core
        mb = sum(size_mb(n) for n in added)
        print(f"| + [{extra}] | +{mb:.0f} | +{len(added)} | {largest(added)} |")


def largest(names: set[str], count: int = 4) -> str:
    sizes = sorted(((size_mb(n), n) for n in names), reverse=True)[:count]
    return ", ".join(f"{n} {mb:.0f}" for mb, n in sizes)


if __name__ == "__main__":
    main()
