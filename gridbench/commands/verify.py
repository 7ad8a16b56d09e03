"""`python -m gridbench.commands.verify release=PATH [verify.crosscheck=true]`: re-prove a shipped release.

Checks every file digest and schema, then re-proves every task with CP-SAT (and the MILP
cross-check, HiGHS or `verify.crosscheck_solver=cbc`, when asked). Prints a summary table;
exits 1 naming every failing task and the reason.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import DictConfig

from pipeline.cli import command
from pipeline.config import register_configs, verify_settings
from pipeline.storage.read import require_manifest, shown

if TYPE_CHECKING:
    from pipeline.storage.verification import VerifyReport

register_configs()


def print_report(report: VerifyReport, seconds: float, milp: str | None) -> None:
    """Print tasks, proved and failed per domain, then every file and task failure on stderr."""
    total = Counter(report.tasks.values())
    failed = Counter(report.tasks[t] for t in report.failures if t in report.tasks)
    proof = f"CP-SAT + {milp.upper()}" if milp else "CP-SAT"
    if report.shards:
        proof += f", {len(report.shards)} shards"
    print(f"{'domain':12s} {'tasks':>6s} {'proved':>7s} {'failed':>7s}   ({proof}, {seconds:.1f}s)")
    for domain in sorted(total):
        proved = total[domain] - failed[domain]
        print(f"{shown(domain, 40):12s} {total[domain]:6d} {proved:7d} {failed[domain]:7d}")
    print(
        f"{'all':12s} {sum(total.values()):6d} {sum(total.values()) - sum(failed.values()):7d} "
        f"{sum(failed.values()):7d}"
    )
    for line in report.unverified:
        print(f"NOTE not verifiable from the release alone: {shown(line, 300)}")
    for line in report.file_failures:
        print(f"FILE {shown(line, 400)}", file=sys.stderr)
    for task_id in sorted(report.failures):
        for reason in report.failures[task_id]:
            print(f"FAIL {shown(f'{task_id}: {reason}', 400)}", file=sys.stderr)


def verify(cfg: DictConfig) -> int:
    """Check every file digest of ``cfg.release`` and re-prove every task; 0 when all hold, else 1."""
    start = time.perf_counter()
    settings = verify_settings(cfg)
    release = Path(str(cfg.release))
    require_manifest(release)  # a folder that is no release is one line before the verifier loads
    # the verifier and its libraries (polars, pyarrow, jsonschema: 0.2 s) load once there is a
    # release to verify, not for --help or a mistyped path
    from pipeline.storage.verification import verify_release

    report = verify_release(release, settings)
    print_report(report, time.perf_counter() - start, settings.milp)
    if report.ok:
        print("release verified: every file matches its digest and every task is re-proved")
        return 0
    return 1


main = command("verify")(verify)


if __name__ == "__main__":
    main()
