"""Against the reference implementation (uservan/AgentCE_Bench, MIT) on its six hardest course
cells: 5x7, H 15 and 21 x B 19, 21 and 25 (its README's "large configuration" command, one
worker), each side a whole process, start-up included; ours with the release's settings (CP-SAT
certificate, measures and the HiGHS cross-check). Prints wall and CPU (user + sys) and the
ratios; never fails on speed.

    .venv/bin/python bench/bench_reference.py --reference /path/to/AgentCE_Bench

The reference needs ``rich`` and ``numpy`` (both in ``.venv``); its ``data_generation`` and
``utils`` folders are enough. It writes its dataset under its own ``data/``: it is run in a
temporary copy.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

REFERENCE = [
    "data_generation/generate.py",
    "--domain", "course", "--rows", "5", "--cols", "7",
    "--hidden-slots", "15", "21", "--branch-budget", "19", "21", "25",
    "--candidates-per-slot", "25", "--max-retries", "350", "--candidate-resample-retries", "30",
    "--open-valid-preference-tries", "100", "150", "250", "--seed", "42", "--max-workers", "1",
]  # fmt: skip

OURS = r"""
from hydra import compose, initialize_config_dir
from gridbench_core.paths import CONF_DIR
from pipeline.config import register_configs, generation_settings, release_keys
from pipeline.storage.cache import make_tasks
register_configs()
with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
    cfg = compose(config_name="config")
settings = generation_settings(cfg)
cells = {(h, b) for h in (15, 21) for b in (19, 21, 25)}
keys = [k for k in release_keys(cfg) if k.domain == "course" and (k.hidden_slots, k.decoy_budget) in cells]
assert len(keys) == 6 and settings.crosscheck, (keys, settings)
made, _ = make_tasks(keys, settings, None, 1, "six cells")
assert all(m.answer.certificate.ok and m.answer.crosscheck.ok for m in made)
"""


def measured(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + sys, its children included) of ``command``."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        error = process.stderr.read().decode()[-1500:] if process.stderr else ""
        raise SystemExit(f"{' '.join(command[:3])} failed: {error}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reference", type=Path, required=True, help="a checkout of uservan/AgentCE_Bench")
    parser.add_argument("--runs", type=int, default=1, help="runs of ours per run of the reference")
    args = parser.parse_args()
    if not (args.reference / "data_generation" / "generate.py").is_file():
        raise SystemExit(f"--reference {args.reference}: no data_generation/generate.py there")
    print(f"== against the reference, six hardest course cells (5x7); {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "reference"
        for part in ("data_generation", "utils"):
            shutil.copytree(args.reference / part, copy / part)
        (copy / "utils" / "__init__.py").touch()
        env = {**os.environ, "PYTHONPATH": str(copy)}
        theirs = measured([sys.executable, *REFERENCE], copy, env)
        ours = [
            measured([sys.executable, "-c", OURS], Path(folder), dict(os.environ)) for _ in range(args.runs)
        ]
    wall, cpu = min(o[0] for o in ours), min(o[1] for o in ours)
    print(f"  reference   wall {theirs[0]:8.2f} s  cpu {theirs[1]:8.2f} s")
    print(f"  gridbench   wall {wall:8.2f} s  cpu {cpu:8.2f} s  (best of {args.runs})")
    print(f"  ratio       wall {theirs[0] / wall:8.1f}x  cpu {theirs[1] / cpu:8.1f}x")


if __name__ == "__main__":
    main()
