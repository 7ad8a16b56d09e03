"""``make mutate``: mutation testing (mutmut) of the code that proves, verifies and scores.

Reads ``modules.toml`` beside this file (groups of modules and the tests that guard them) and
runs mutmut once per group in its own workspace, ``outputs/mutation/work/<group>/`` (links to
the repository's folders; mutmut writes its mutated copies there, never into the working
tree). Two groups run side by side (``--parallel``): one group's serial phases (copying,
mutant generation, the stats and clean runs) overlap the other's mutants. Hypothesis runs the
``mutation`` profile of tests/conftest.py: derandomized as in CI, so a mutant is killed by the
same examples on every run, not by a lucky seed, with fewer examples and no shrinking. A group
with ``shared_releases = true`` (its modules are never called by a release build) builds the
test releases once and every mutant's run reads them. Writes
``outputs/mutation/results.json`` (merged across runs, so groups can be run one at a time) and
``outputs/mutation/report.md``: per module the mutants, killed, survivors, the equivalent
mutants of ``equivalent.toml`` (not counted) and the kill rate, then every survivor.

    python tests/mutation/mutate.py                 # every group
    python tests/mutation/mutate.py solvers env     # some groups
    python tests/mutation/mutate.py --report        # only rewrite the report from results.json

Exits 1 when a module's kill rate is below ``--min-kill-rate`` (default 0.9).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
OUT = ROOT / "outputs" / "mutation"
# what a workspace links to: the packages (copied by mutmut, the group's modules mutated) and
# what the tests read beside them
PACKAGES = ("gridbench_core", "domains", "solvers", "pipeline", "gridbench")
ALSO = ("conf", "schemas", "README.md", "LICENSE", "bench")
KILLED = {"killed", "timeout", "segfault", "caught by type check"}


def load_groups(path: Path = HERE / "modules.toml") -> dict[str, dict[str, Any]]:
    """The groups of ``modules.toml``, each with existing ``modules`` and ``tests``; a path that
    does not exist (a module or test moved) stops the run before anything is mutated."""
    missing_packages = [name for name in PACKAGES if not (ROOT / name / "__init__.py").exists()]
    if missing_packages:
        raise SystemExit(f"mutate.py: PACKAGES names folders that are no package: {missing_packages}")
    groups = tomllib.loads(path.read_text())
    for name, group in groups.items():
        unknown = set(group) - {"modules", "tests", "shared_releases", "fork_server"}
        if unknown:
            raise SystemExit(f"{path.name}: [{name}] has unknown keys {sorted(unknown)}")
        outside = [p for p in group.get("modules", []) if p.split("/")[0] not in PACKAGES]
        if outside:
            raise SystemExit(f"{path.name}: [{name}].modules outside the packages {PACKAGES}: {outside}")
        for key in ("modules", "tests"):
            missing = [p for p in group.get(key, []) if not (ROOT / p.split("::")[0]).exists()]
            if not group.get(key) or missing:
                raise SystemExit(f"{path.name}: [{name}].{key} is empty or names missing paths {missing}")
    return groups


def load_equivalents(
    path: Path = HERE / "equivalent.toml", groups: dict[str, dict[str, Any]] | None = None
) -> list[dict[str, str]]:
    """The equivalent mutants: module, function, the line before and after, and why. Each names
    a module of a group (one naming a moved module would never match and silently stop counting)."""
    if not path.exists():
        return []
    groups = load_groups() if groups is None else groups
    modules = {module for group in groups.values() for module in group["modules"]}
    entries = tomllib.loads(path.read_text()).get("equivalent", [])
    for entry in entries:
        if set(entry) != {"module", "function", "before", "after", "reason"} or not entry["reason"]:
            raise SystemExit(
                f"{path.name}: each [[equivalent]] needs module, function, before, after, reason"
            )
        if entry["module"] not in modules:
            raise SystemExit(f"{path.name}: {entry['module']} is the module of no group in modules.toml")
    return entries


def fastest_first(tests: list[str], durations: dict[str, float]) -> list[str]:
    """``tests`` grouped by file, the files by their total recorded time and each file's tests
    by their own, fastest first (a test with no recorded time counts as slow)."""
    slow = max(durations.values(), default=1.0) + 1.0
    by_file: dict[str, list[str]] = {}
    for test in tests:
        by_file.setdefault(test.split("::")[0], []).append(test)
    files = sorted(by_file.values(), key=lambda group: (sum(durations.get(t, slow) for t in group), group[0]))
    return [t for group in files for t in sorted(group, key=lambda t: (durations.get(t, slow), t))]


def mutmut_config(group: dict[str, Any]) -> str:
    """The ``[tool.mutmut]`` table of a group's workspace."""
    values = {
        "source_paths": list(PACKAGES),
        "only_mutate": group["modules"],
        "also_copy": [name for name in ALSO if (ROOT / name).exists()],
        # one process per mutant; the CI profile comes from CI=true
        "pytest_add_cli_args": ["-n", "0", "-p", "no:cacheprovider"],
        "pytest_add_cli_args_test_selection": group["tests"],
        "use_git_change_detection": False,
        # mutmut stops a mutant after (its tests' call time + constant) x multiplier x 2 CPU
        # seconds; call times leave out fixtures (a small release is built per test module),
        # so the default constant of 1 s stopped mutants in their fixtures and counted them
        # as killed. The limit is CPU time (a busy machine does not count against it); a small
        # release builds in about 2 CPU s, so 60 s covers the fixtures with a wide margin and a
        # mutant that really loops costs four minutes, not ten.
        "timeout_constant": 60.0,
        "timeout_multiplier": 2.0,
    }
    if group.get("fork_server"):
        # mutmut forks each mutant's run from its main process, which by then has run the
        # stats and clean tests in-process; after polars has started its thread pool there a
        # forked child can wait forever on a lock a pool thread held (seen: every child of the
        # verify group asleep on a futex). A fork server forks from a process that only
        # collected the tests.
        values["process_isolation"] = "forkserver"
    lines = ["", "[tool.mutmut]"] + [f"{key} = {json.dumps(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


def prepare(workspace: Path, group: dict[str, Any], resume: bool) -> None:
    """A workspace of links to the repository and a pyproject.toml carrying the group's config."""
    if workspace.exists() and not resume:
        shutil.rmtree(workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    for name in (*PACKAGES, "tests", *ALSO):
        link = workspace / name
        if (ROOT / name).exists() and not link.is_symlink():
            link.symlink_to(ROOT / name)
    pyproject = (ROOT / "pyproject.toml").read_text()
    if "[tool.mutmut]" in pyproject:
        raise SystemExit("pyproject.toml: [tool.mutmut] is made per group by tests/mutation/mutate.py")
    (workspace / "pyproject.toml").write_text(pyproject + mutmut_config(group))


def run_group(name: str, group: dict[str, Any], jobs: int, resume: bool) -> dict[str, Any]:
    """Run mutmut over one group; its modules' results and the wall time."""
    workspace = OUT / "work" / name
    prepare(workspace, group, resume)
    env = {**os.environ, "CI": "true", "HYPOTHESIS_PROFILE": "mutation", "PYTHONHASHSEED": "0"}
    if group.get("shared_releases"):
        releases = workspace / "releases"
        shutil.rmtree(releases, ignore_errors=True)  # built again by this run's first session
        env["GRIDBENCH_TEST_RELEASES"] = str(releases)
    else:
        env.pop("GRIDBENCH_TEST_RELEASES", None)
    start = time.perf_counter()
    with (OUT / f"{name}.log").open("w") as log:
        done = subprocess.run(
            [sys.executable, str(HERE / "run_mutmut.py"), "run", "--max-children", str(jobs)],
            cwd=workspace,
            env=env,
            stdout=log,
            stderr=log,
        )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(
            f"mutmut failed on group {name} (exit {done.returncode}); see {OUT / (name + '.log')}"
        )
    modules = {module: collect(workspace, module) for module in group["modules"]}
    return {"seconds": round(seconds, 1), "jobs": jobs, "tests": group["tests"], "modules": modules}


def collect(workspace: Path, module: str) -> dict[str, Any]:
    """Statuses of a module's mutants, with the diff of each one not killed."""
    from mutmut.stats import status_by_exit_code

    meta = workspace / "mutants" / (module + ".meta")
    codes = json.loads(meta.read_text())["exit_code_by_key"] if meta.exists() else {}
    statuses = {key: status_by_exit_code[code] for key, code in codes.items()}
    alive = []
    for key, status in sorted(statuses.items(), key=lambda kv: _order(kv[0])):
        if status not in KILLED:
            before, after = mutant_diff(workspace, module, key)
            alive.append(
                {
                    "mutant": key,
                    "status": status,
                    "function": function_of(key),
                    "before": before,
                    "after": after,
                }
            )
    killed = sum(status in KILLED for status in statuses.values())
    return {"mutants": len(statuses), "killed": killed, "alive": alive}


def _order(key: str) -> tuple[str, int]:
    stem, _, number = key.rpartition("__mutmut_")
    return stem, int(number) if number.isdigit() else 0


def function_of(key: str) -> str:
    """``solvers.cpsat.xǁCpSatModelǁsolve__mutmut_3`` -> ``CpSatModel.solve``."""
    stem = key.rpartition("__mutmut_")[0].rsplit(".", 1)[-1]
    if stem.startswith("xǁ"):
        return ".".join(part for part in stem[2:].split("ǁ") if part)
    return stem.removeprefix("x_")


def mutant_diff(workspace: Path, module: str, key: str) -> tuple[str, str]:
    """The lines a mutant removes and adds (each joined, stripped), as ``mutmut show`` has them."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    here = Path.cwd()
    os.chdir(workspace)
    try:
        shown = get_diff_for_mutant(key, path=module)
    finally:
        os.chdir(here)
    lines = [line for line in shown.splitlines() if line[:3] not in ("---", "+++", "@@ ")]
    removed = " ".join(line[1:].strip() for line in lines if line.startswith("-"))
    added = " ".join(line[1:].strip() for line in lines if line.startswith("+"))
    return removed, added


def classify(results: dict[str, Any], equivalents: list[dict[str, str]]) -> dict[str, dict[str, Any]]:
    """Per module: mutants, killed, equivalent (listed, not counted), survivors, kill rate."""
    table = {}
    for group in results.values():
        for module, data in group["modules"].items():
            equivalent, survivors = [], []
            for mutant in data["alive"]:
                reason = next(
                    (
                        e["reason"]
                        for e in equivalents
                        if (e["module"], e["function"], e["before"], e["after"])
                        == (module, mutant["function"], mutant["before"], mutant["after"])
                    ),
                    None,
                )
                (equivalent if reason else survivors).append({**mutant, "reason": reason})
            counted = data["mutants"] - len(equivalent)
            rate = data["killed"] / counted if counted else None
            table[module] = {
                "mutants": data["mutants"],
                "killed": data["killed"],
                "equivalent": equivalent,
                "survivors": survivors,
                "kill_rate": rate,
            }
    return table


def _cell(text: str) -> str:
    return "`" + text.replace("|", "\\|").replace("`", "'")[:150] + "`" if text else "(nothing)"


def report(
    results: dict[str, Any], equivalents: list[dict[str, str]], run: dict[str, Any] | None = None
) -> str:
    """The Markdown report: the per-module table, then the survivors and the equivalents."""
    table = classify(results, equivalents)
    lines = [
        "# Mutation testing (`make mutate`, mutmut)",
        "",
        "| module | mutants | killed | equivalent | survivors | kill rate |",
        "|---|---|---|---|---|---|",
    ]
    for module, row in table.items():
        rate = "n/a" if row["kill_rate"] is None else f"{100 * row['kill_rate']:.1f}%"
        lines.append(
            f"| {module} | {row['mutants']} | {row['killed']} | {len(row['equivalent'])} "
            f"| {len(row['survivors'])} | {rate} |"
        )
    lines += ["", "| group | tests | wall time |", "|---|---|---|"]
    for name, group in results.items():
        lines.append(
            f"| {name} | {', '.join(group['tests'])} | {group['seconds']:.0f} s ({group['jobs']} jobs) |"
        )
    total = sum(group["seconds"] for group in results.values())
    lines += ["", f"Sum of the groups' wall times: {total:.0f} s."]
    if run:
        lines.append(
            f"Last run: {len(run['groups'])} group(s), {run['parallel']} side by side, "
            f"{run['wall_seconds']:.0f} s wall ({', '.join(run['groups'])})."
        )
    lines += ["", "## Survivors", ""]
    lines += ["| module | function | status | line | mutated to |", "|---|---|---|---|---|"]
    for module, row in table.items():
        for s in row["survivors"]:
            lines.append(
                f"| {module} | {s['function']} | {s['status']} | {_cell(s['before'])} | {_cell(s['after'])} |"
            )
    lines += [
        "",
        "## Equivalent mutants (not counted)",
        "",
        "| module | function | line | mutated to | why |",
    ]
    lines.append("|---|---|---|---|---|")
    for module, row in table.items():
        for e in row["equivalent"]:
            lines.append(
                f"| {module} | {e['function']} | {_cell(e['before'])} | {_cell(e['after'])} | {e['reason']} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the groups asked for (all by default), then write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("groups", nargs="*", help="groups of modules.toml (default: all)")
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 2, help="mutants tested at once in a group"
    )
    parser.add_argument("--parallel", type=int, default=2, help="groups run side by side")
    parser.add_argument("--resume", action="store_true", help="keep mutmut's results of an earlier run")
    parser.add_argument("--report", action="store_true", help="only write the report from results.json")
    parser.add_argument(
        "--collect", action="store_true", help="read the groups' results from their workspaces"
    )
    parser.add_argument("--min-kill-rate", type=float, default=0.9)
    args = parser.parse_args(argv)
    groups = load_groups()
    equivalents = load_equivalents(groups=groups)
    unknown = sorted(set(args.groups) - set(groups))
    if unknown:
        raise SystemExit(f"unknown group(s) {unknown}; groups: {sorted(groups)}")
    OUT.mkdir(parents=True, exist_ok=True)
    stored = OUT / "results.json"
    results = json.loads(stored.read_text()) if stored.exists() else {}
    for name in args.groups if args.collect else []:  # from the workspace of an earlier run
        workspace = OUT / "work" / name
        modules = {module: collect(workspace, module) for module in groups[name]["modules"]}
        results[name] = {**results.get(name, {"seconds": 0.0, "jobs": 0}), "tests": groups[name]["tests"]}
        results[name]["modules"] = modules
    if not args.report and not args.collect:
        # the longest groups of the last run first, so that the last to finish is a short one
        names = sorted(args.groups or list(groups), key=lambda n: -results.get(n, {}).get("seconds", 1e9))
        start = time.perf_counter()

        def one(name: str) -> dict[str, Any]:
            print(f"mutate: group {name}: {', '.join(groups[name]['modules'])}", flush=True)
            done = run_group(name, groups[name], args.jobs, args.resume)
            print(f"mutate: group {name} done in {done['seconds']:.0f} s", flush=True)
            return done

        with ThreadPoolExecutor(max(1, args.parallel)) as pool:
            running = {pool.submit(one, name): name for name in names}
            for future in as_completed(running):
                name, done = running[future], future.result()
                # re-read: another run (another group) may have written its results meanwhile
                results = json.loads(stored.read_text()) if stored.exists() else {}
                results[name] = done
                stored.write_text(json.dumps(results, indent=1, ensure_ascii=False))
        wall = round(time.perf_counter() - start, 1)
        print(f"mutate: {len(names)} group(s) in {wall:.0f} s wall", flush=True)
        results = json.loads(stored.read_text())
        run = {"groups": names, "wall_seconds": wall, "parallel": args.parallel}
        results.setdefault("_runs", []).append(run)
        stored.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    stored.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    runs = results.get("_runs", [])
    results = {name: results[name] for name in groups if name in results}  # config order
    (OUT / "report.md").write_text(report(results, equivalents, runs[-1] if runs else None))
    table = classify(results, equivalents)
    low = []
    for module, row in table.items():
        rate = row["kill_rate"]
        shown = "n/a" if rate is None else f"{100 * rate:.1f}%"
        print(f"  {module:40s} {row['mutants']:4d} mutants  {len(row['survivors']):3d} survivors  {shown}")
        if rate is not None and rate < args.min_kill_rate:
            low.append(module)
    print(f"report: {OUT / 'report.md'}")
    if low:
        print(f"below {args.min_kill_rate:.0%}: {', '.join(low)}")
    return 1 if low else 0


if __name__ == "__main__":
    sys.exit(main())
