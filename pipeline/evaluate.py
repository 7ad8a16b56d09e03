"""`python -m pipeline.evaluate` (make eval): run one agent over a release.

One row per episode in `<output_root>/<release>/<run>/results.parquet` (the run is the agent,
plus its budgets when they are not unlimited, e.g. `search@q=paper+0,c=paperx1.0`), the tool calls of
each episode in `traces.jsonl`. Resumable: finished episodes (kept in `episodes.jsonl`) are
skipped. The agent sees the task file only; the answer file is read by the scorer.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import hydra
import polars as pl
from omegaconf import DictConfig, OmegaConf

from agents import make_agent
from env import EnvSettings, Episode, score
from pipeline.cli import run_cli
from pipeline.config import register_configs
from pipeline.parallel import parallel_imap
from pipeline.verify_release import read_manifest
from solvers.task_io import answer_from_dict, task_from_dict

register_configs()


def episode_id(task_id: str, agent: str, failure_rate: float, trial: int, env: EnvSettings) -> str:
    text = json.dumps([task_id, agent, failure_rate, trial, asdict(env)], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_label(agent: str, env: EnvSettings) -> str:
    """The run's name: the agent, plus its budgets when they are not unlimited."""
    if env.query_budget == "unlimited" and env.check_budget == "unlimited":
        return agent
    query = f"{env.query_budget}+{env.query_extra}" if env.query_budget == "paper" else env.query_budget
    check = f"{env.check_budget}x{env.check_alpha}" if env.check_budget == "paper" else env.check_budget
    return f"{agent}@q={query},c={check}"


def run_episode(job: tuple[str, str, str, str, float, int, EnvSettings, bool]) -> dict[str, Any]:
    root, task_rel, agent_name, key, failure_rate, trial, env_settings, traces = job
    task = task_from_dict(json.loads((Path(root) / task_rel).read_text()))
    settings = EnvSettings(**{**asdict(env_settings), "failure_rate": failure_rate})
    episode = Episode(task, settings, seed=trial, record=traces)
    agent = make_agent(agent_name)
    start = time.perf_counter()
    agent.play(episode, random.Random(f"{task.task_id}|{agent_name}|{trial}"))
    wall_ms = (time.perf_counter() - start) * 1000.0
    answer_rel = "answers/" + task_rel[len("tasks/"):]
    answer = answer_from_dict(json.loads((Path(root) / answer_rel).read_text()))
    result = score(episode, answer)
    calls = result.pop("calls")
    row = {"episode_id": key, "task_id": task.task_id, "domain": task.domain,
           "hidden_slots": task.hidden_slots, "decoy_budget": task.decoy_budget,
           "agent": run_label(agent_name, env_settings), "policy": agent_name,
           "query_budget": str(env_settings.query_budget), "check_budget": str(env_settings.check_budget),
           "failure_rate": failure_rate, "trial": trial, **result,
           "calls_json": json.dumps(calls, sort_keys=True), "wall_ms": wall_ms}  # fmt: skip
    return {"row": row, "trace": episode.trace}


def select_tasks(release: Path, cfg: DictConfig) -> list[tuple[str, dict[str, Any]]]:
    meta = pl.read_parquet(release / "metadata.parquet")
    for column, values in (("domain", cfg.domains), ("hidden_slots", cfg.hidden_slots),
                           ("decoy_budget", cfg.decoy_budgets)):  # fmt: skip
        if values:
            meta = meta.filter(pl.col(column).is_in(list(values)))
    return [(f"tasks/{row['domain']}/{row['task_id']}.json", row) for row in meta.iter_rows(named=True)]


def evaluate(cfg: DictConfig) -> int:
    release = Path(str(cfg.release))
    read_manifest(release)
    make_agent(str(cfg.agent))  # unknown agent: error before any work
    env_values = OmegaConf.to_container(cfg.env, resolve=True)
    env_settings = EnvSettings(**env_values)  # type: ignore[arg-type]
    env_settings.validate()
    out = Path(str(cfg.output_root)) / release.name / run_label(str(cfg.agent), env_settings)
    out.mkdir(parents=True, exist_ok=True)
    done_path, trace_path = out / "episodes.jsonl", out / "traces.jsonl"
    finished = _finished(done_path) if cfg.resume else {}
    jobs = []
    for task_rel, _ in select_tasks(release, cfg):
        for rate in cfg.failure_rates:
            for trial in range(int(cfg.trials)):
                key = episode_id(task_rel, str(cfg.agent), float(rate), trial, env_settings)
                if key not in finished:
                    jobs.append((str(release), task_rel, str(cfg.agent), key, float(rate), trial,
                                 env_settings, bool(cfg.traces)))  # fmt: skip
    start = time.perf_counter()
    with open(done_path, "a") as done_file, open(trace_path, "a") as trace_file:
        for result in parallel_imap(run_episode, jobs, int(cfg.workers), f"eval {cfg.agent}",
                                    unit="episode", ordered=False):  # fmt: skip
            done_file.write(json.dumps(result["row"]) + "\n")
            if result["trace"] is not None:
                trace_file.write(json.dumps({"episode_id": result["row"]["episode_id"],
                                             "calls": result["trace"]}) + "\n")
    rows = list(_finished(done_path).values())
    frame = pl.DataFrame(rows).sort(["domain", "hidden_slots", "decoy_budget", "failure_rate",
                                     "trial", "task_id"])  # fmt: skip
    frame.write_parquet(out / "results.parquet")
    seconds = time.perf_counter() - start
    summary = frame.group_by("failure_rate").agg(pl.col("success").mean(), pl.len()).sort("failure_rate")
    print(f"{cfg.agent} on {release.name}: {len(jobs)} new episodes ({len(rows) - len(jobs)} "
          f"reused) in {seconds:.1f}s -> {out / 'results.parquet'}")
    for row in summary.iter_rows(named=True):
        print(f"  failure rate {row['failure_rate']}: success {row['success']:.3f} over {row['len']}")
    return 0


def _finished(path: Path) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a line cut by an interrupted run is redone
            rows[row["episode_id"]] = row
    return rows


@hydra.main(version_base=None, config_path="../conf/apps", config_name="evaluate")
def main(cfg: DictConfig) -> None:
    run_cli(evaluate, cfg)


if __name__ == "__main__":
    main()
