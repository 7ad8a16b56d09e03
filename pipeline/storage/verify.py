"""Re-prove a shipped release from its files alone: digests, schemas, then every proof."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from pipeline.generation.certify import certify
from pipeline.parallel import parallel_imap
from pipeline.storage.read import read_manifest
from pipeline.storage.write import SCHEMA_DIR, sha256
from solvers.milp import crosscheck
from solvers.results import SolverSettings
from solvers.task import Answer, Task, TaskFormatError
from solvers.task_io import answer_from_dict, task_from_dict


@dataclass
class VerifyReport:
    tasks: dict[str, str] = field(default_factory=dict)  # task_id -> domain
    failures: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    file_failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures and not self.file_failures


def check_files(path: Path, manifest: dict[str, Any], report: VerifyReport) -> None:
    listed = manifest.get("files", {})
    for relative, digest in sorted(listed.items()):
        file = path / relative
        if not file.is_file():
            report.file_failures.append(f"{relative}: listed in the manifest but missing")
        elif sha256(file.read_bytes()) != digest:
            report.file_failures.append(f"{relative}: digest mismatch (file changed)")
    present = {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}
    for extra in sorted(present - set(listed) - {"manifest.json"}):
        report.file_failures.append(f"{extra}: not listed in the manifest")


def _validators() -> dict[str, jsonschema.Draft202012Validator]:
    return {kind: jsonschema.Draft202012Validator(json.loads(
        (SCHEMA_DIR / f"{kind}.schema.json").read_text())) for kind in ("task", "answer")}


def consistency(task: Task, answer: Answer) -> list[str]:
    """The answer must describe this task: same id, visible cells, candidates and budget."""
    problems = []
    if answer.task_id != task.task_id:
        problems.append(f"answer is for task {answer.task_id}")
    for r, row in enumerate(task.grid):
        for c, cell in enumerate(row):
            if cell is not None and answer.truth[r][c] != cell:
                problems.append(f"truth changes visible cell ({r},{c})")
    slots = {(s.row, s.col): s for s in task.slots}
    for role in answer.roles:
        slot = slots.get((role.row, role.col))
        if slot is None:
            problems.append(f"role for ({role.row},{role.col}) which is not hidden")
        elif set(slot.candidates) != {role.truth, *role.decoys, *role.filtered}:
            problems.append(f"roles of ({role.row},{role.col}) do not match its candidates")
        if answer.truth[role.row][role.col] != role.truth:
            problems.append(f"truth grid and roles disagree at ({role.row},{role.col})")
    decoys = sum(len(role.decoys) for role in answer.roles)
    if decoys != task.decoy_budget:
        problems.append(f"{decoys} decoys but decoy_budget={task.decoy_budget}")
    return problems


def prove_one(args: tuple[str, str, str, SolverSettings, str | None]) -> tuple[str, str, list[str]]:
    """Load one task/answer pair and return (task_id, domain, failure reasons). ``milp`` names
    the cross-check solver (``highs`` or ``cbc``), or None for CP-SAT alone."""
    root, task_rel, answer_rel, solver, milp = args
    validators = _validators()
    reasons: list[str] = []
    try:
        task_data = json.loads((Path(root) / task_rel).read_text())
        answer_data = json.loads((Path(root) / answer_rel).read_text())
    except (OSError, ValueError) as error:
        return task_rel, "?", [f"unreadable: {error}"]
    for kind, data in (("task", task_data), ("answer", answer_data)):
        for problem in validators[kind].iter_errors(data):
            reasons.append(f"schema error in {kind} file at {list(problem.path)}: {problem.message}")
    task_id, domain = str(task_data.get("task_id", task_rel)), str(task_data.get("domain", "?"))
    if reasons:
        return task_id, domain, reasons
    try:
        task, answer = task_from_dict(task_data), answer_from_dict(answer_data)
    except (TaskFormatError, KeyError, TypeError, ValueError) as error:
        return task_id, domain, [f"malformed: {error}"]
    reasons += consistency(task, answer)
    if reasons:
        return task_id, domain, reasons
    reasons += certify(task, answer, solver)["failures"]
    if milp:
        decoys = {(r.row, r.col): list(r.decoys) for r in answer.roles}
        record = crosscheck(task, answer.truth_choice(), decoys, solver, milp)
        if not record["ok"]:
            reasons.append(f"{record['solver']} disagrees: {record['statuses']}"
                           + (f", second solution {record['counterexample']}"
                              if "counterexample" in record else ""))  # fmt: skip
    return task_id, domain, reasons


def verify_release(path: Path, solver: SolverSettings, milp: str | None,
                   workers: int) -> VerifyReport:  # fmt: skip
    manifest = read_manifest(path)
    report = VerifyReport()
    check_files(path, manifest, report)
    pairs = sorted(name for name in manifest.get("files", {}) if name.startswith("tasks/"))
    jobs = [(str(path), rel, "answers/" + rel[len("tasks/"):], solver, milp) for rel in pairs]
    results = list(parallel_imap(prove_one, jobs, workers, f"verify {path.name}"))
    for task_id, domain, reasons in results:
        report.tasks[task_id] = domain
        if reasons:
            report.failures[task_id].extend(reasons)
    return report
