"""`python -m gridbench.commands.import_agentce [source=DIR]`: the reference implementation's data files
-> a release of our format that `verify` accepts, with a per-instance uniqueness report.

Every instance is converted and re-certified from its own data. Instances whose answer is
not provably unique (or whose decoys / filtered items are not what they claim) are reported
and left out of the release (`import_report.json` in the release lists every instance).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from gridbench_core.errors import UserError
from pipeline.cli import command, plain
from pipeline.config import check_solver, register_configs, solver_settings
from pipeline.generation.records import CertifiedTask
from pipeline.generation.seal import seal
from pipeline.parallel import check_workers, parallel_imap
from pipeline.storage.agentce import convert, licence_of, read_file
from pipeline.storage.card import DataLicence
from pipeline.storage.layout import check_target, dumps, release_dir
from pipeline.storage.read import shown
from pipeline.storage.safe import read_user_file
from pipeline.storage.write import write_release
from solvers.results import SolverSettings

register_configs()


def certify_instance(args: tuple[Any, ...]) -> tuple[CertifiedTask, dict[str, Any]]:
    """Seal one imported instance (certify, measure, cross-check); the task and its status row."""
    key, task, answer, solver, milp, node_limit = args
    start = time.perf_counter()
    sealed = seal(task, answer, solver, node_limit, milp)
    timings = {**sealed.timings, "generate_ms": (time.perf_counter() - start) * 1000.0}
    made = CertifiedTask(key, task, sealed.answer(answer), timings)
    status = {
        "task_id": task.task_id,
        "domain": task.domain,
        "hidden_slots": task.hidden_slots,
        "decoy_budget": task.decoy_budget,
        "unique": sealed.certificate.uniqueness == "INFEASIBLE",
        "certified": sealed.certificate.ok,
        "failures": list(sealed.certificate.failures[:5]),
        "crosscheck_ok": sealed.crosscheck.ok if sealed.crosscheck else None,
    }
    return made, status


def run_import(cfg: DictConfig) -> int:
    """Import the AgentCE files at ``cfg.source`` as a release of their certified instances; the exit code."""
    release = cfg.release
    check_workers(release.workers, "release.workers")  # settings first, before any read
    check_solver(cfg)
    source = Path(str(cfg.source))
    try:
        files = sorted(source.glob("*.json")) if source.is_dir() else [source]
        found = bool(files) and all(f.is_file() for f in files)
    except OSError as error:  # a name too long, a loop of links
        raise UserError(f"source={shown(source)}: cannot be read ({error.strerror})") from None
    if not found:
        raise FileNotFoundError(f"no AgentCE dataset files at {source}; pass source=DIR or FILE")
    target = release_dir(release.output_root, release.name, release.version)
    check_target(target, bool(release.overwrite))
    solver: SolverSettings = solver_settings(cfg)
    jobs = []
    for path in files:
        data = read_file(path)
        for index, instance in enumerate(data["instances"]):
            key, task, answer = convert(str(data["domain"]), instance, index, path.name)
            milp = str(cfg.crosscheck_solver) if release.crosscheck else None
            jobs.append((key, task, answer, solver, milp, int(cfg.dfs_node_limit)))
    licence = source_licence(source, str(cfg.get("source_licence") or ""))
    start = time.perf_counter()
    results = list(parallel_imap(certify_instance, jobs, int(release.workers), "import", unit="instance"))
    kept = [made for made, status in results if status["certified"]]
    report = [status for _, status in results]
    write_release(
        target,
        kept,
        str(release.name),
        str(release.version),
        plain(cfg),
        bool(release.overwrite),
        extra_files={"import_report.json": dumps({"instances": report})},
        licence=licence,
    )
    print_summary(report, target, time.perf_counter() - start)
    return 0


def source_licence(source: Path, given: str) -> DataLicence:
    """The imported data's own licence, which travels with it: the ``LICENSE`` beside the
    source files (or ``source_licence=PATH``), its text copied verbatim into the release and
    its copyright line named in the card. Without one the import stops: data of unknown
    licence is not republished. The file is read as untrusted input (a regular file, bounded)."""
    path = Path(given) if given else (source if source.is_dir() else source.parent) / "LICENSE"
    if not path.is_file():
        raise UserError(
            f"no licence for the imported data at {path}; put the source's LICENSE beside its "
            "files or pass source_licence=PATH"
        )
    try:
        text = read_user_file(path, 1024 * 1024).decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{path}: the licence is not UTF-8 text") from None
    return licence_of(text)


def print_summary(report: list[dict[str, Any]], target: Path, seconds: float) -> None:
    """Print instances, unique and certified per domain, then every instance that was not certified."""
    total: Counter[str] = Counter()
    unique: Counter[str] = Counter()
    certified: Counter[str] = Counter()
    for status in report:
        total[status["domain"]] += 1
        unique[status["domain"]] += status["unique"]
        certified[status["domain"]] += status["certified"]
    print(f"{'domain':12s} {'instances':>9s} {'unique':>7s} {'certified':>9s}")
    for domain in sorted(total):
        print(f"{domain:12s} {total[domain]:9d} {unique[domain]:7d} {certified[domain]:9d}")
    print(f"{'all':12s} {sum(total.values()):9d} {sum(unique.values()):7d} {sum(certified.values()):9d}")
    print(
        f"release {target}: {sum(certified.values())} certified instances written "
        f"({seconds:.1f}s); per-instance report in import_report.json"
    )
    for status in report:
        if not status["certified"]:
            print(f"  not certified: {status['task_id']}: {'; '.join(status['failures'][:2])}")


main = command("import_agentce")(run_import)


if __name__ == "__main__":
    main()
