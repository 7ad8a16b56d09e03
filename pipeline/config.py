"""Structured config schemas (registered with Hydra's ConfigStore) and their conversion to
frozen settings. Nothing below the entry points sees an OmegaConf object."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field, fields, make_dataclass
from typing import Any, Optional, get_type_hints

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from domains import PAPER_DOMAINS
from pipeline.generation.keys import GenerationSettings, TaskKey
from solvers.results import SolverSettings


@dataclass
class DomainConf:
    name: str = MISSING


@dataclass
class GridConf:
    name: str = MISSING
    rows: int = MISSING
    cols: int = MISSING
    hidden_slots: list[int] = MISSING
    decoy_budgets: list[int] = MISSING
    candidates_per_slot: int = 25
    room_over_budget: int = 2  # K = max(candidates_per_slot, B + room_over_budget)


@dataclass
class ReleaseConf:
    name: str = "gridbench"
    version: str = "1.0.0"
    domains: list[str] = field(default_factory=lambda: list(PAPER_DOMAINS))  # conf/release/*.yaml
    tasks_per_cell: int = 1
    seed: int = 0
    output_root: str = "outputs/releases"
    cells_root: str = "outputs/cells"
    overwrite: bool = False
    workers: int = 2
    crosscheck: bool = True
    audit_splits: int = 0  # > 0: the dataset card gets the classifier audit too (slower)
    salt_env: str = ""  # name of an environment variable holding the secret salt of a private release


@dataclass
class SolverConf:
    time_limit_s: float = 10.0
    workers: int = 1


# The `generation` group: every field of GenerationSettings except those set by other
# groups (solver time limit and workers, release.crosscheck). Defaults live in one place.
_FROM_OTHER_GROUPS = ("time_limit_s", "solver_workers", "crosscheck")
GenerationConf = make_dataclass(
    "GenerationConf",
    [(f.name, get_type_hints(GenerationSettings)[f.name], field(default=f.default))
     for f in fields(GenerationSettings) if f.name not in _FROM_OTHER_GROUPS],
)  # fmt: skip


@dataclass
class TaskConf:
    hidden_slots: Any = None  # int or null (every H of the grid)
    decoy_budget: Any = None  # int or null (every B of the grid)


@dataclass
class Config:
    domain: DomainConf = field(default_factory=DomainConf)
    grid: GridConf = field(default_factory=GridConf)
    release: ReleaseConf = field(default_factory=ReleaseConf)
    solver: SolverConf = field(default_factory=SolverConf)
    generation: Any = field(default_factory=GenerationConf)  # typed by GenerationConf
    task: TaskConf = field(default_factory=TaskConf)


@dataclass
class VerifyOptions:
    crosscheck: bool = False
    crosscheck_solver: str = "highs"
    workers: int = 2


@dataclass
class VerifyConfig:
    release: str = MISSING
    verify: VerifyOptions = field(default_factory=VerifyOptions)
    solver: SolverConf = field(default_factory=SolverConf)


@dataclass
class ImportConfig:
    source: str = "../shared/anchors/agentce_5x5"
    release: ReleaseConf = field(default_factory=ReleaseConf)  # name and version: conf/apps
    crosscheck_solver: str = "highs"
    dfs_node_limit: int = 50_000
    solver: SolverConf = field(default_factory=SolverConf)


@dataclass
class EnvConf:
    query_budget: Any = "unlimited"
    query_extra: int = 0
    check_budget: Any = "unlimited"
    check_alpha: float = 1.0
    seed: int = 0
    max_steps: int = 1_000_000  # tool calls per episode


@dataclass
class AgentConf:
    """Every agent's configuration (``conf/agent/*.yaml``); the LLM fields are ignored by the
    baselines. ``_target_`` (with ``kwargs``) names your own agent class."""

    name: str = "search"
    _target_: str = ""
    kwargs: Any = None  # a mapping (Any, so that `agent.kwargs={...}` can set new keys)
    model: str = ""
    base_url: Optional[str] = None  # noqa: UP045 (OmegaConf reads typing.Optional)
    api_key_env: str = "OPENAI_API_KEY"
    temperature: Optional[float] = None  # noqa: UP045
    top_p: Optional[float] = None  # noqa: UP045
    max_tokens: Optional[int] = None  # noqa: UP045
    seed: Optional[int] = None  # noqa: UP045
    max_steps: int = 200
    timeout: float = 120.0
    max_retries: int = 4
    tool_choice: Optional[str] = "auto"  # noqa: UP045
    parallel_tool_calls: Optional[bool] = None  # noqa: UP045
    extra_body: Any = None  # a mapping passed through to the server
    max_reminders: int = 3
    concurrency: int = 32
    prompt_dir: Optional[str] = None  # noqa: UP045


@dataclass
class EvaluateConfig:
    release: str = "outputs/releases/gridbench-v1.0.0"
    agent: AgentConf = field(default_factory=AgentConf)
    shard: str = ""  # "I/N": this machine's share of the episodes
    run_name: str = ""  # default: the agent (llm-<model>) plus its budgets
    domains: list[str] = field(default_factory=list)
    hidden_slots: list[int] = field(default_factory=list)
    decoy_budgets: list[int] = field(default_factory=list)
    failure_rates: list[float] = field(default_factory=lambda: [0.0])
    trials: int = 1
    env: EnvConf = field(default_factory=EnvConf)
    workers: int = 2
    output_root: str = "outputs/runs"
    traces: bool = True
    resume: bool = True


@dataclass
class AuditConfig:
    release: str = "outputs/releases/gridbench-v1.0.0"
    splits: int = 10
    seed: int = 0
    output: str = ""


@dataclass
class ReportConfig:
    runs_root: Any = "outputs/runs/gridbench-v1.0.0"  # a folder, or a list of them
    output: str = "outputs/reports/gridbench-v1.0.0"


def register_configs() -> None:
    """Register the schemas so that a misspelt key fails with a message naming it. Group
    files are typed through the fields of the top-level schema, so no group is registered
    (a registered `release` group would clash with `verify release=PATH`)."""
    store = ConfigStore.instance()
    store.store(name="base_config", node=Config)
    store.store(name="base_verify", node=VerifyConfig)
    store.store(name="base_import", node=ImportConfig)
    store.store(name="base_evaluate", node=EvaluateConfig)
    store.store(name="base_report", node=ReportConfig)
    store.store(name="base_audit", node=AuditConfig)


def generation_settings(cfg: DictConfig) -> GenerationSettings:
    values = OmegaConf.to_container(cfg.generation, resolve=True)
    if not isinstance(values, dict):
        raise ValueError("generation settings must be a mapping")
    return GenerationSettings(**{str(k): v for k, v in values.items()},
                              time_limit_s=float(cfg.solver.time_limit_s),
                              solver_workers=int(cfg.solver.workers),
                              crosscheck=bool(cfg.release.crosscheck))  # fmt: skip


def solver_settings(cfg: DictConfig) -> SolverSettings:
    return SolverSettings(time_limit_s=float(cfg.solver.time_limit_s),
                          workers=int(cfg.solver.workers))  # fmt: skip


def candidates_for(grid: DictConfig, budget: int) -> int:
    return max(int(grid.candidates_per_slot), budget + int(grid.room_over_budget))


def release_salt(cfg: DictConfig) -> str:
    """The secret of a private release: the value of the variable named by
    ``release.salt_env`` ("" when the release is public). Never written anywhere."""
    name = str(cfg.release.salt_env or "")
    if not name:
        return ""
    value = os.environ.get(name, "")
    if not value:
        raise ValueError(f"release.salt_env={name}: the environment variable {name} is not set "
                         f"or empty; export {name}=<secret> or drop release.salt_env")  # fmt: skip
    return value


def salt_record(salt: str) -> dict[str, Any]:
    """What a manifest may say about the salt: whether there is one, and its SHA-256."""
    if not salt:
        return {"salted": False}
    return {"salted": True, "salt_sha256": hashlib.sha256(salt.encode()).hexdigest()}


def cell_keys(cfg: DictConfig, domain: str, hidden: int, budget: int) -> list[TaskKey]:
    grid, salt = cfg.grid, release_salt(cfg)
    return [TaskKey(domain, int(grid.rows), int(grid.cols), hidden, budget,
                    candidates_for(grid, budget), int(cfg.release.seed), index, salt)
            for index in range(int(cfg.release.tasks_per_cell))]  # fmt: skip


def release_keys(cfg: DictConfig) -> list[TaskKey]:
    """Every key of the release, in a fixed order (domain, H, B, index)."""
    return [key for domain in cfg.release.domains for hidden in cfg.grid.hidden_slots
            for budget in cfg.grid.decoy_budgets
            for key in cell_keys(cfg, str(domain), int(hidden), int(budget))]  # fmt: skip
