"""Outside semantic mutants (issue 27, item 4): realistic planted bugs in the modules that prove,
verify and score, each run against the quick tests that guard its module.

    .venv/bin/python bench/run_mutants.py                  # every mutant in mutants_round5.json
    .venv/bin/python bench/run_mutants.py --only m03 m17   # some of them
    .venv/bin/python bench/run_mutants.py --baseline       # the selections on unmutated code
    .venv/bin/python bench/run_mutants.py --mutants bench/mutants_round6.json --jobs 1   # round 6

The mutants live in ``bench/mutants_round5.json`` (``--mutants``: another round's, such as
``bench/mutants_round6.json``): file, the exact original snippet (it must
occur once), its replacement and a one-line description; ``equivalent`` (optional) is the
reason a mutant changes no behaviour. Each run copies the working tree (no .git, .venv or
outputs) into a temporary folder once, applies one mutant there at a time and restores the
file afterwards (also on Ctrl-C or a time-out), so the checkout itself is never changed. The
tests run with ``CI=1`` (the derandomized Hypothesis profile CI uses), ``pytest -x -q -n 2``
and a time limit per mutant. A mutant is *killed* when the tests fail, *survived* when they
pass, *timeout* when they outlast the limit (counted as not killed), *equivalent* when it
survives and carries a reason. Results: a table by module and the kill rate (equivalents
apart), and a JSON file (``--out``, default outputs/<the mutants file's name>/results.json).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "bench" / "mutants_round5.json"

SOLVER_TESTS = [
    "tests/solvers",
    "tests/pipeline/generation/test_certify_records.py",
    "tests/pipeline/generation/test_measures_and_repair.py",
    "tests/pipeline/generation/test_canonical_search.py",
]
GENERATION_TESTS = [
    "tests/pipeline/generation",
    "tests/solvers/test_timeouts.py",
    "tests/solvers/test_timeout_each_solve.py",
]
VERIFY_TESTS = [
    "tests/pipeline/storage/test_verify_checks.py",
    "tests/pipeline/storage/test_verify_records.py",
    "tests/pipeline/storage/test_verify_hostile.py",
    "tests/pipeline/storage/test_verify_measures.py",
    "tests/pipeline/storage/test_claims_hostile.py",
    "tests/pipeline/storage/test_tables.py",
    "tests/pipeline/storage/test_verify_sharded.py",
    "tests/pipeline/test_round4_fronts.py",
]
TASK_TESTS = [
    "tests/solvers/test_format2.py",
    "tests/solvers/test_region_bounds.py",
    "tests/pipeline/storage/test_verify_checks.py",
    "tests/pipeline/storage/test_verify_records.py",
    "tests/pipeline/storage/test_verify_hostile.py",
    "tests/gridbench/test_api.py",
    "tests/gridbench/test_api_edges.py",
    "tests/gridbench/test_api_hostile.py",
    "tests/pipeline/generation/test_bad_input.py",
]
SCORING_TESTS = [
    "tests/gridbench",
    "tests/adapters/test_parity.py",
    "tests/adapters/test_loop_parity.py",
]
# round 6 (bench/mutants_round6.json): generation stages, storage, adaptive, domains, prompt
GEN_TESTS = ["tests/pipeline/generation", "tests/pipeline/integrity/test_tells.py"]
MEASURE_TESTS = [
    *GEN_TESTS,
    "tests/pipeline/storage/test_verify_measures.py",
    "tests/solvers/test_solver_agreement.py",
]
TABLE_TESTS = [
    "tests/pipeline/storage/test_tables.py",
    "tests/pipeline/storage/test_tables_edges.py",
    "tests/pipeline/storage/test_bounded_reads.py",
    "tests/pipeline/storage/test_release.py",
    "tests/solvers/test_format2.py",
    "tests/pipeline/generation/test_large_budgets.py",
]
SHARD_TESTS = ["tests/pipeline/test_train.py", "tests/pipeline/storage/test_verify_sharded.py"]
WRITE_TESTS = [
    "tests/pipeline/storage/test_release.py",
    "tests/pipeline/storage/test_tables.py",
    "tests/pipeline/storage/test_byte_identity.py",
    "tests/gridbench/test_procedural.py",
]
DOMAIN_TESTS = [
    "tests/pipeline/generation/test_sampling_stream.py",
    "tests/pipeline/generation/test_bad_input.py",
    "tests/pipeline/generation/test_contract.py",
    "tests/test_architecture.py",
]
PROMPT_TESTS = [
    "tests/gridbench/agents/test_prompt.py",
    "tests/gridbench/agents/test_llm_runner.py",
    "tests/gridbench/agents/test_llm_edges.py",
    "tests/gridbench/agents/test_llm_hostile.py",
    "tests/gridbench/test_api_hostile.py",
    "tests/pipeline/storage/test_tables.py",
]
# module -> (tests, whether the releases the tests read may be built once and shared: only
# when the build never calls the module)
SELECTIONS: dict[str, tuple[list[str], bool]] = {
    "solvers/cpsat.py": (SOLVER_TESTS, False),
    "solvers/milp.py": (SOLVER_TESTS, False),
    "solvers/ladder.py": (SOLVER_TESTS, False),
    "solvers/propagation.py": (SOLVER_TESTS, False),
    "solvers/checker.py": (SOLVER_TESTS, False),
    "pipeline/generation/certify.py": (GENERATION_TESTS, False),
    "pipeline/generation/repair.py": (GENERATION_TESTS, False),
    "pipeline/storage/verification.py": (VERIFY_TESTS, True),
    "pipeline/storage/claimed.py": (VERIFY_TESTS, True),
    "gridbench_core/task.py": (TASK_TESTS, False),
    "gridbench_core/task_io.py": (TASK_TESTS, False),
    "gridbench/env/scoring.py": (SCORING_TESTS, False),
    "gridbench/scoring.py": (SCORING_TESTS, False),
    "pipeline/generation/bounds.py": (GEN_TESTS, False),
    "pipeline/generation/measures.py": (MEASURE_TESTS, False),
    "pipeline/generation/candidates.py": (GEN_TESTS, False),
    "pipeline/generation/sample.py": (GEN_TESTS, False),
    "pipeline/generation/cages.py": (GEN_TESTS, False),
    "pipeline/generation/constrain.py": (GEN_TESTS, False),
    "pipeline/generation/resist.py": (GEN_TESTS, False),
    "pipeline/storage/tables.py": (TABLE_TESTS, False),
    "pipeline/storage/shards.py": (SHARD_TESTS, False),
    "pipeline/storage/write.py": (WRITE_TESTS, False),
    "gridbench/adaptive/controller.py": (["tests/gridbench/test_adaptive.py"], True),
    "gridbench/adaptive/ladder.py": (["tests/gridbench/test_adaptive.py"], True),
    "domains/base.py": (DOMAIN_TESTS, False),
    "gridbench_core/prompt.py": (PROMPT_TESTS, False),
    "pipeline/evaluation/summary.py": (["tests/pipeline/evaluation"], True),
}


def snapshot(dest: Path) -> Path:
    """The working tree (code and tests, no .git, .venv or outputs) copied into ``dest``."""
    tree = dest / "tree"
    shutil.copytree(
        ROOT,
        tree,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "outputs", "__pycache__", ".mypy_cache", ".ruff_cache"
        ),
        symlinks=True,
    )
    return tree


def run_tests(
    tree: Path, tests: list[str], shared: Path | None, timeout: float, jobs: int
) -> tuple[str, float, str]:
    """(``pass`` / ``fail`` / ``timeout``, seconds, the last lines of the output)."""
    env = dict(os.environ, CI="1", PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
    env.pop("HYPOTHESIS_PROFILE", None)
    if shared is not None:
        env["GRIDBENCH_TEST_RELEASES"] = str(shared)
    else:
        env.pop("GRIDBENCH_TEST_RELEASES", None)
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-n", str(jobs), *tests]
    start = time.monotonic()
    process = subprocess.Popen(
        command, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return "timeout", time.monotonic() - start, output.decode(errors="replace")[-600:]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    seconds = time.monotonic() - start
    text = output.decode(errors="replace")
    tail = "\n".join(text.strip().splitlines()[-6:])
    if process.returncode == 0:
        return "pass", seconds, tail
    return "fail", seconds, tail


def table(results: list[dict]) -> str:
    rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for result in results:
        rows[result["file"]][result["status"]] += 1
    lines = [
        "| module | mutants | killed | survived | timeout | equivalent | kill rate |",
        "|---|---|---|---|---|---|---|",
    ]
    totals: dict[str, int] = defaultdict(int)
    for module in sorted(rows):
        count = rows[module]
        for key, value in count.items():
            totals[key] += value
        lines.append(_row(module, count))
    lines.append(_row("**all**", totals))
    return "\n".join(lines)


def _row(name: str, count: dict[str, int]) -> str:
    killed, survived, timeout, equivalent = (
        count.get(k, 0) for k in ("killed", "survived", "timeout", "equivalent")
    )
    judged = killed + survived + timeout
    rate = f"{100.0 * killed / judged:.1f}%" if judged else "n/a"
    total = judged + equivalent + count.get("invalid", 0)
    return f"| {name} | {total} | {killed} | {survived} | {timeout} | {equivalent} | {rate} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mutants",
        type=Path,
        default=MUTANTS,
        help="the round's mutants (round 6: bench/mutants_round6.json)",
    )
    parser.add_argument("--only", nargs="*", default=None, help="mutant ids to run")
    parser.add_argument("--module", default=None, help="only mutants of files containing this text")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds per mutant")
    parser.add_argument("--jobs", type=int, default=2, help="pytest-xdist workers")
    parser.add_argument("--baseline", action="store_true", help="run each selection on unmutated code")
    parser.add_argument(
        "--tests", nargs="*", default=None, help="run these tests instead of the module's selection"
    )
    parser.add_argument("--out", type=Path, default=None, help="default: outputs/<mutants name>/results.json")
    args = parser.parse_args()
    if args.out is None:  # a round's results beside its own, never over another round's
        args.out = ROOT / "outputs" / args.mutants.stem / "results.json"

    mutants = json.loads(args.mutants.read_text())
    if args.only:
        mutants = [m for m in mutants if m["id"] in set(args.only)]
    if args.module:
        mutants = [m for m in mutants if args.module in m["file"]]
    work = Path(tempfile.mkdtemp(prefix="gridbench-mutants-"))
    shared = work / "releases"
    tree = snapshot(work)
    results: list[dict] = []
    current: tuple[Path, str] | None = None

    def restore() -> None:
        if current is not None:
            current[0].write_text(current[1])

    def on_signal(number: int, _frame: object) -> None:
        restore()
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    try:
        if args.baseline:
            for tests, share in {(tuple(t), s) for t, s in SELECTIONS.values()}:
                status, seconds, tail = run_tests(
                    tree, list(tests), shared if share else None, 1e9, args.jobs
                )
                print(f"baseline {status} {seconds:.0f}s {' '.join(tests)[:100]}\n{tail}\n", flush=True)
            return 0
        for mutant in mutants:
            path = tree / mutant["file"]
            original = path.read_text()
            tests, share = SELECTIONS[mutant["file"]]
            tests = args.tests or tests
            record = {k: mutant[k] for k in ("id", "file", "description")}
            if original.count(mutant["original"]) != 1:
                record.update(status="invalid", seconds=0.0, tail="original snippet not found once")
            else:
                current = (path, original)
                path.write_text(original.replace(mutant["original"], mutant["replacement"]))
                try:
                    outcome, seconds, tail = run_tests(
                        tree, tests, shared if share else None, args.timeout, args.jobs
                    )
                finally:
                    restore()
                    current = None
                status = {"fail": "killed", "pass": "survived", "timeout": "timeout"}[outcome]
                if status != "killed" and mutant.get("equivalent"):
                    status = "equivalent"
                record.update(status=status, seconds=round(seconds, 1), tail=tail)
            results.append(record)
            print(
                f"{record['id']} {record['status']:10s} {record['seconds']:6.0f}s {record['file']}: "
                f"{record['description']}",
                flush=True,
            )
    except KeyboardInterrupt:
        print("interrupted; the mutated file was restored (the checkout was never changed)", file=sys.stderr)
    finally:
        restore()
        shutil.rmtree(work, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    print()
    print(table(results))
    for result in results:
        if result["status"] in ("survived", "timeout"):
            print(f"  {result['status']}: {result['id']} {result['file']}: {result['description']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
