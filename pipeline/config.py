"""Structured config schemas (registered with Hydra's ConfigStore) and their conversion to
frozen settings. Nothing below the entry points sees an OmegaConf object."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field, fields, make_dataclass
from typing import TYPE_CHECKING, Any, Optional, get_type_hints

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from domains import PAPER_DOMAINS
from gridbench_core import paths
from gridbench_core.errors import UserError
from gridbench_core.llm_settings import LLMSettings, field_names, yaml_defaults
from pipeline.generation.keys import GenerationSettings, TaskKey, candidates_for
from pipeline.generation.validate import MAX_SIDE, decoy_cell_count, validate_key
from pipeline.parallel import check_workers
from solvers.results import SolverSettings, deterministic_settings

if TYPE_CHECKING:
    from pipeline.storage.settings import VerifySettings


@dataclass
class DomainConf:
    """The ``domain`` group (``conf/domain/*.yaml``): the domain a generate run builds."""

    name: str = MISSING


@dataclass
class GridConf:
    """The ``grid`` group (``conf/grid/*.yaml``): grid size, hidden cells H, decoy budgets B, candidates."""

    name: str = MISSING
    rows: int = MISSING
    cols: int = MISSING
    hidden_slots: list[int] = MISSING
    decoy_budgets: list[int] = MISSING
    candidates_per_slot: int = 25
    # K = max(candidates_per_slot, B + room_over_budget); null: K = candidates_per_slot at every B
    room_over_budget: Optional[int] = 2  # noqa: UP045


@dataclass
class ReleaseConf:
    """The ``release`` group (``conf/release/*.yaml``): what a release holds and where it is written."""

    name: str = "gridbench"
    version: str = "2.0.0"
    domains: list[str] = field(default_factory=lambda: list(PAPER_DOMAINS))  # conf/release/*.yaml
    tasks_per_cell: int = 1
    seed: int = 0
    output_root: str = str(paths.RELEASES)
    cache_root: str = str(paths.CACHE)
    overwrite: bool = False
    workers: int = 2
    crosscheck: bool = True
    audit_splits: int = 0  # > 0: the dataset card gets the classifier audit too (slower)
    salt_env: str = ""  # name of an environment variable holding the secret salt of a private release


@dataclass
class SolverConf:
    """The ``solver`` group: the time limit and workers of each solver call."""

    time_limit_s: float = 10.0
    workers: int = 1


# The `generation` group: every field of GenerationSettings except those set by other
# groups (solver time limit and workers, release.crosscheck). Defaults live in one place.
_FROM_OTHER_GROUPS = ("time_limit_s", "solver_workers", "crosscheck")
GenerationConf = make_dataclass(
    "GenerationConf",
    [
        (f.name, get_type_hints(GenerationSettings)[f.name], field(default=f.default))
        for f in fields(GenerationSettings)
        if f.name not in _FROM_OTHER_GROUPS
    ],
)


@dataclass
class TaskConf:
    """The ``task`` group: one H and one B to generate, or null for every one of the grid."""

    hidden_slots: Any = None  # int or null (every H of the grid)
    decoy_budget: Any = None  # int or null (every B of the grid)


@dataclass
class RayConf:
    """Where ``executor=ray`` runs (``ray.*`` on any command that fans out)."""

    address: str = (
        "local"  # local: start a local instance; auto: join the running cluster; or ray://HOST:PORT
    )
    num_cpus: Optional[int] = None  # noqa: UP045  (a local instance's CPUs; null: every core)
    batch_size: int = 0  # jobs per Ray task; 0: about four Ray tasks per CPU
    max_retries: int = 2  # a failed Ray task is retried this often, then reported by its jobs' keys


@dataclass
class Config:
    """The schema of the release and generate commands (``conf/config.yaml``)."""

    domain: DomainConf = field(default_factory=DomainConf)
    grid: GridConf = field(default_factory=GridConf)
    release: ReleaseConf = field(default_factory=ReleaseConf)
    solver: SolverConf = field(default_factory=SolverConf)
    generation: Any = field(default_factory=GenerationConf)  # typed by GenerationConf
    task: TaskConf = field(default_factory=TaskConf)
    executor: str = "local"  # local: this machine's process pool | ray
    ray: RayConf = field(default_factory=RayConf)


@dataclass
class VerifyOptions:
    """The ``verify`` options: the MILP cross-check, its solver, and the worker processes."""

    crosscheck: bool = False
    crosscheck_solver: str = "highs"
    workers: int = 2


@dataclass
class VerifyConfig:
    """The schema of the verify command (``conf/apps/verify.yaml``)."""

    release: str = MISSING
    verify: VerifyOptions = field(default_factory=VerifyOptions)
    solver: SolverConf = field(default_factory=SolverConf)
    executor: str = "local"  # local: this machine's process pool | ray
    ray: RayConf = field(default_factory=RayConf)


@dataclass
class ImportConfig:
    """The schema of the AgentCE import command (``conf/apps/import_agentce.yaml``)."""

    source: str = "../shared/anchors/agentce_5x5"
    source_licence: str = ""  # the imported data's LICENSE file; empty: beside the source files
    release: ReleaseConf = field(default_factory=ReleaseConf)  # name and version: conf/apps
    crosscheck_solver: str = "highs"
    dfs_node_limit: int = 50_000
    solver: SolverConf = field(default_factory=SolverConf)
    executor: str = "local"  # local: this machine's process pool | ray
    ray: RayConf = field(default_factory=RayConf)


@dataclass
class EnvConf:
    """The ``env`` options of an evaluation: budgets, seed and tool calls per episode."""

    query_budget: Any = "unlimited"
    query_extra: int = 0
    check_budget: Any = "unlimited"
    check_alpha: float = 1.0
    seed: int = 0
    max_steps: int = 1_000_000  # tool calls per episode


def _schema_type(hint: Any) -> Any:
    """A field type as OmegaConf reads it: ``X | None`` as ``Optional[X]`` for a scalar X,
    anything else (a mapping) as ``Any``."""
    scalars = (str, int, float, bool)
    if hint in scalars:
        return hint
    args = [a for a in getattr(hint, "__args__", ()) if a is not type(None)]
    if len(args) == 1 and args[0] in scalars and type(None) in hint.__args__:
        return Optional[args[0]]  # noqa: UP045 (OmegaConf reads typing.Optional)
    return Any


def _llm_fields() -> list[tuple[str, Any, Any]]:
    """The LLM settings as schema fields: the types of :class:`LLMSettings`, the defaults of
    ``conf/agent/llm.yaml`` (its ``???`` stays missing until a run gives it)."""
    hints = get_type_hints(LLMSettings)
    defaults = yaml_defaults()
    return [
        (
            name,
            _schema_type(hints[name]),
            field(default=MISSING if defaults[name] == "???" else defaults[name]),
        )
        for name in field_names()
    ]


# Every agent's configuration (conf/agent/*.yaml): name, a custom agent's class and arguments
# (_target_, kwargs), and the LLM settings (ignored by the other agents), made from
# LLMSettings so that no field or default is written twice.
AgentConf = make_dataclass(
    "AgentConf",
    [
        ("name", str, field(default="search")),
        ("_target_", str, field(default="")),
        ("kwargs", Any, field(default=None)),  # a mapping (Any: `agent.kwargs={...}` sets new keys)
        *_llm_fields(),
    ],
)


@dataclass
class EvaluateConfig:
    """The schema of the evaluate command (``conf/apps/evaluate.yaml``)."""

    release: str = str(paths.RELEASE)
    agent: Any = field(default_factory=AgentConf)  # typed by AgentConf
    shard: str = ""  # "I/N": this machine's share of the episodes
    run_name: str = ""  # default: the agent (llm-<model>) plus its budgets
    domains: list[str] = field(default_factory=list)
    hidden_slots: list[int] = field(default_factory=list)
    decoy_budgets: list[int] = field(default_factory=list)
    failure_rates: list[float] = field(default_factory=lambda: [0.0])
    trials: int = 1
    env: EnvConf = field(default_factory=EnvConf)
    workers: int = 2
    output_root: str = str(paths.RUNS)
    traces: bool = True
    resume: bool = True
    executor: str = "local"  # local: this machine's process pool | ray
    ray: RayConf = field(default_factory=RayConf)


@dataclass
class AuditConfig:
    """The schema of the audit command (``conf/apps/audit.yaml``)."""

    release: str = str(paths.RELEASE)
    splits: int = 10
    seed: int = 0
    output: str = ""
    transfer: bool = True  # rule-free classifiers trained on a companion build of another seed
    transfer_seed_offset: int = 1
    workers: int = 2  # processes for the companion build


@dataclass
class HubConfig:
    """The schema of the publish command (``conf/apps/hub.yaml``)."""

    release: str = str(paths.RELEASE)
    repo_id: str = ""
    dry_run: bool = False
    verbose: bool = False  # with dry_run: every file, not one line per folder
    private: bool = False
    answers: bool = True
    token_env: str = "HF_TOKEN"
    message: str = ""


@dataclass
class TrainPart:
    """One kind of grid in a training set: its shards draw H and B from these ranges."""

    grid: str = "5x7"
    hidden_slots: list[int] = field(default_factory=lambda: [1, 21])  # [low, high], inclusive
    decoy_budgets: list[int] = field(default_factory=lambda: [0, 25])


@dataclass
class TrainConfig:
    """The schema of the sharded training-set build (``conf/apps/train.yaml``)."""

    name: str = "gridbench-train"
    version: str = "2.0.0"
    size: int = 100_000
    seed: int = 0
    domains: list[str] = field(default_factory=lambda: list(PAPER_DOMAINS))
    parts: list[TrainPart] = field(default_factory=lambda: [TrainPart()])
    shard_size: int = 1000
    candidates_per_slot: int = 25
    crosscheck: bool = False
    output_root: str = str(paths.RELEASES)
    workers: int = 2
    executor: str = "local"
    ray: RayConf = field(default_factory=RayConf)


@dataclass
class ReportConfig:
    """The schema of the report command (``conf/apps/report.yaml``)."""

    runs_root: Any = str(paths.RUNS / paths.DEFAULT_NAME)  # a folder, or a list of them
    output: str = ""  # "": outputs/reports/<the first runs_root's name>
    release: str = ""  # the release to validate; "": outputs/releases/<first runs_root's name>


@dataclass
class ViewConfig:
    """The schema of the view command (``conf/apps/view.yaml``)."""

    runs_root: Any = str(paths.RUNS / paths.DEFAULT_NAME)  # a folder, or a list of them
    output: str = ""  # "": outputs/views/<the first runs_root's name>
    release: str = ""  # the release of the runs (grids, truth); "": outputs/releases/<runs_root's name>


def register_configs() -> None:
    """Register the schemas so that a misspelt key fails with a message naming it. Group
    files are typed through the fields of the top-level schema, so no group is registered
    (a registered `release` group would clash with `verify release=PATH`). Once a process:
    every command module registers them on import and the pre-check again, and storing the
    nine schemas (each made a structured config) cost about 25 ms each time."""
    if not OmegaConf.has_resolver("path"):
        OmegaConf.register_new_resolver("path", paths.default)
    store = ConfigStore.instance()
    schemas = {
        "base_config": Config,
        "base_verify": VerifyConfig,
        "base_import": ImportConfig,
        "base_evaluate": EvaluateConfig,
        "base_report": ReportConfig,
        "base_view": ViewConfig,
        "base_audit": AuditConfig,
        "base_hub": HubConfig,
        "base_train": TrainConfig,
    }
    if all(f"{name}.yaml" in store.repo for name in schemas):  # stored as "<name>.yaml"
        return
    for name, node in schemas.items():
        store.store(name=name, node=node)


def generation_settings(cfg: DictConfig) -> GenerationSettings:
    """The :class:`GenerationSettings` of ``cfg``, with solver and cross-check settings from other groups."""
    values = OmegaConf.to_container(cfg.generation, resolve=True)
    if not isinstance(values, dict):
        raise UserError("generation settings must be a mapping")
    return GenerationSettings(
        **{str(k): v for k, v in values.items()},
        time_limit_s=float(cfg.solver.time_limit_s),
        solver_workers=int(cfg.solver.workers),
        crosscheck=bool(cfg.release.crosscheck),
    )


def solver_settings(cfg: DictConfig) -> SolverSettings:
    """The :class:`SolverSettings` of ``cfg.solver``: ``time_limit_s`` units of CP-SAT's
    deterministic time, as generation uses them, so that verify proves on a loaded machine what
    it proves on a quiet one (:func:`solvers.results.deterministic_settings`)."""
    return deterministic_settings(float(cfg.solver.time_limit_s), int(cfg.solver.workers))


def verify_settings(cfg: DictConfig) -> VerifySettings:
    """The :class:`VerifySettings` of a verify configuration (``conf/apps/verify.yaml``),
    checked: ``verify.workers``, the ``solver`` group and ``verify.crosscheck_solver``."""
    from pipeline.storage.read import shown
    from pipeline.storage.settings import VerifySettings

    check_workers(cfg.verify.workers, "verify.workers")
    check_solver(cfg)
    if str(cfg.verify.crosscheck_solver) not in ("highs", "cbc"):
        raise UserError(
            f"verify.crosscheck_solver={shown(cfg.verify.crosscheck_solver, 40)}: use highs or cbc"
        )
    milp = str(cfg.verify.crosscheck_solver) if cfg.verify.crosscheck else None
    return VerifySettings(solver_settings(cfg), milp, int(cfg.verify.workers), build_schema=Config)


def grid_candidates(grid: DictConfig, budget: int) -> int:
    """K of a grid preset at decoy budget B (:func:`pipeline.generation.keys.candidates_for`)."""
    room = None if grid.room_over_budget is None else int(grid.room_over_budget)
    return candidates_for(int(grid.candidates_per_slot), room, budget)


def release_salt(cfg: DictConfig) -> str:
    """The secret of a private release: the value of the variable named by
    ``release.salt_env`` ("" when the release is public). Never written anywhere."""
    name = str(cfg.release.salt_env or "")
    if not name:
        return ""
    value = os.environ.get(name, "")
    if not value:
        raise UserError(
            f"release.salt_env={name}: the environment variable {name} is not set "
            f"or empty; export {name}=<secret> or drop release.salt_env"
        )
    return value


def salt_record(salt: str) -> dict[str, Any]:
    """What a manifest may say about the salt: whether there is one, and its SHA-256."""
    if not salt:
        return {"salted": False}
    return {"salted": True, "salt_sha256": hashlib.sha256(salt.encode()).hexdigest()}


def sweep_keys(cfg: DictConfig, domain: str, hidden: int, budget: int) -> list[TaskKey]:
    """The task keys of one (domain, H, B) point of the sweep, one per ``release.tasks_per_cell``
    (the SPEC's name for the setting; everywhere else a "cell" is a grid cell)."""
    grid, salt = cfg.grid, release_salt(cfg)
    return [
        TaskKey(
            domain,
            int(grid.rows),
            int(grid.cols),
            hidden,
            budget,
            grid_candidates(grid, budget),
            int(cfg.release.seed),
            index,
            salt,
        )
        for index in range(int(cfg.release.tasks_per_cell))
    ]


def release_keys(cfg: DictConfig) -> list[TaskKey]:
    """Every key of the release, in a fixed order (domain, H, B, index)."""
    return [
        key
        for domain in cfg.release.domains
        for hidden in cfg.grid.hidden_slots
        for budget in cfg.grid.decoy_budgets
        for key in sweep_keys(cfg, str(domain), int(hidden), int(budget))
    ]


# Validation at the edge ---------------------------------------------------------------------


def check_keys(keys: list[TaskKey], settings: GenerationSettings) -> None:
    """Every key of a build, before any work: :func:`validate_key`, and a ``min_depth`` that
    no task of a key can reach. The generator caps the depth of a key whose decoys lie in
    no cell or in one; decoys in two cells are always decided by fixpoint plus probing (each
    probe leaves one free cell, which propagation decides exactly), so a deeper rung there
    would be re-drawn ``attempts`` times in vain."""
    from solvers.ladder import PROBING, rung_index

    seen: set[tuple[int, int, int]] = set()
    for key in keys:
        validate_key(key, settings)
        shape = (key.hidden_slots, key.decoy_budget, key.candidates_per_slot)
        if shape in seen or rung_index(settings.min_depth) <= PROBING:
            continue
        seen.add(shape)
        if decoy_cell_count(key, settings) == 2:
            raise UserError(
                f"generation.min_depth={settings.min_depth}: no task of H={key.hidden_slots} "
                f"B={key.decoy_budget} can need it: allocation {settings.allocation!r} puts its decoys "
                "in 2 hidden cells, and fixpoint plus probing decides any two; use "
                "generation.min_depth=probing, or a decoy budget that fills 3 or more cells "
                "(generation.allocation=spread puts one decoy per cell)"
            )


MAX_CANDIDATES = 200  # candidates per hidden cell
SEED_MAX = 2**63 - 1


def _int(value: Any, key: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"{key}={value!r} must be a whole number between {low} and {high}")
    if not low <= value <= high:
        raise UserError(f"{key}={value} is out of range: use {low}..{high}")
    return value


def _int_list(values: Any, key: str, low: int, high: int) -> list[int]:
    values = list(values) if values is not None else []
    if not values:
        raise UserError(f"{key}=[] is empty; give at least one value, e.g. {key}=[{low}]")
    checked = [_int(v, f"{key} item", low, high) for v in values]
    duplicated = sorted({v for v in checked if checked.count(v) > 1})
    if duplicated:
        raise UserError(f"{key} repeats {duplicated}; list each value once")
    return checked


def check_solver(cfg: DictConfig) -> None:
    """``solver.workers`` and ``solver.time_limit_s`` (a finite number of seconds)."""
    _int(cfg.solver.workers, "solver.workers", 1, 64)
    limit = cfg.solver.time_limit_s
    if isinstance(limit, bool) or not isinstance(limit, int | float) or not 0 < float(limit) <= 3600:
        raise UserError(f"solver.time_limit_s={limit} must be a number of seconds in (0, 3600]")


def check_generation_config(cfg: DictConfig) -> None:
    """Every range of a release or generate configuration, before any work; raises
    :class:`UserError` naming the key, the value and what is allowed."""
    from domains import domain_names

    grid, release = cfg.grid, cfg.release
    rows = _int(grid.rows, "grid.rows", 1, MAX_SIDE)
    cols = _int(grid.cols, "grid.cols", 1, MAX_SIDE)
    _int_list(grid.hidden_slots, "grid.hidden_slots", 1, rows * cols)
    _int_list(grid.decoy_budgets, "grid.decoy_budgets", 0, rows * cols * (MAX_CANDIDATES - 1))
    _int(grid.candidates_per_slot, "grid.candidates_per_slot", 2, MAX_CANDIDATES)
    if grid.room_over_budget is not None:
        _int(grid.room_over_budget, "grid.room_over_budget", 0, MAX_CANDIDATES)
    domains = list(release.domains) if release.domains is not None else []
    if not domains:
        raise UserError("release.domains=[] is empty; name at least one, e.g. release.domains=[course]")
    for name in domains:
        if name not in domain_names():
            raise UserError(f"release.domains: unknown domain {name!r}; known: {domain_names()}")
    if len(set(domains)) != len(domains):
        raise UserError(f"release.domains={domains} names a domain twice")
    _int(release.tasks_per_cell, "release.tasks_per_cell", 1, 100_000)
    _int(release.seed, "release.seed", 0, SEED_MAX)
    check_workers(release.workers, "release.workers")
    _int(release.audit_splits, "release.audit_splits", 0, 1000)
    check_solver(cfg)
    for key in ("hidden_slots", "decoy_budget"):
        value = cfg.task.get(key)
        if value is not None:
            _int(value, f"task.{key}", 0 if key == "decoy_budget" else 1, rows * cols * MAX_CANDIDATES)
    generation_settings(cfg).validate()
