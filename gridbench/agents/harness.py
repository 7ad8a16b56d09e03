"""Playing a release: which episodes a run holds, how each is played (a process pool for the
baselines, ``concurrency`` coroutines for the LLM runner) and the row it leaves.

One row per episode in `<output_root>/<release>/<run>/results.parquet` (the run is the agent,
or `llm-<model>`, plus its budgets when they are not unlimited), the transcript of every
episode in `transcripts/` (see pipeline/evaluation/runs.py). Resumable: episodes with a row
are skipped; an LLM episode whose requests kept failing (`end_reason=api_error`) is retried.
Baselines run in a process pool; the LLM runner keeps `agent.concurrency` episodes in flight
in one process. The agent sees the task file only; the answer file is read by the scorer.

An episode's id is a hash of everything that changes its result: the release and task, the
failure rate and trial, the environment settings and the agent's identity (its
configuration, the server's ``base_url``, the prompt templates' SHA-256). A run folder records
that identity (``run.json``) and refuses a command with another one. Failures are loud: a
refused key (401 / 403) or a first batch of episodes that all end in ``api_error`` stops the
run with one line; a run that leaves episodes in ``api_error`` exits 3 and says how many.
``results.parquet`` is rewritten however the run ends.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import random
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import polars as pl

from gridbench.agents.registry import AgentSpec, make_agent
from gridbench.env import EnvSettings, Episode, score_episode
from gridbench_core import paths
from gridbench_core.budgets import UNLIMITED
from gridbench_core.errors import Terminated, UserError, say_stopped, stopped_by
from gridbench_core.task import Answer, Task
from gridbench_core.task_io import answer_from_dict, task_from_dict
from pipeline.evaluation.diagnostics import diagnose
from pipeline.evaluation.knowledge import read_calls
from pipeline.evaluation.runs import RunStore, call_columns, encode_transcript
from pipeline.parallel import Progress, parallel_imap
from pipeline.storage.metadata import METADATA_SCHEMA
from pipeline.storage.parquet import read_arrow_table
from pipeline.storage.read import read_listed, read_listed_json, read_manifest, shown
from pipeline.storage.safe import inside

RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@=,+-]{0,127}\Z")
# How a run talks to its server, not what it asks: left out of an episode's identity.
NOT_IN_EPISODE_ID = (
    "concurrency",
    "timeout",
    "episode_timeout",
    "max_retries",
    "api_key_env",
    "max_reply_bytes",
    "prompt_dir",
)
API_ERRORS_EXIT = 3


class RunStopped(UserError):
    """The run stopped early: every episode would fail the same way."""


@dataclass(frozen=True)
class EvalRequest:
    """Everything a run needs, converted from the configuration once (``gridbench.commands.evaluate``)."""

    release: Path
    spec: AgentSpec
    env: EnvSettings
    failure_rates: tuple[float, ...]
    trials: int
    domains: tuple[str, ...] = ()
    hidden_slots: tuple[int, ...] = ()
    decoy_budgets: tuple[int, ...] = ()
    shard: tuple[int, int] | None = None
    output_root: Path = paths.RUNS
    run_name: str = ""
    workers: int = 2
    traces: bool = True
    resume: bool = True

    @property
    def folder(self) -> Path:
        """The run's output folder: ``<output_root>/<release>/<run>``, checked to lie inside
        ``output_root`` once resolved (``run_name=../../..``, an absolute path, a name that an
        interpolation made so, or a link out of the root are refused with one line)."""
        release = self.release.name or self.release.resolve().name
        run = self.run
        for key, name in (("run_name", run), ("release (its folder name)", release)):
            if not RUN_NAME.match(name) or ".." in name:
                raise UserError(
                    f"{key}={shown(name, 80)}: use letters, digits and . _ - @ = , + (no '/', no "
                    "'..', at most 128 characters); the run folder stays inside output_root"
                )
        folder = self.output_root / release / run
        inside(self.output_root, folder, f"run folder {shown(folder)}")
        return folder

    @property
    def run(self) -> str:
        """The run's name: ``run_name``, or the agent with its budgets."""
        return self.run_name or run_label(self.spec.label, self.env)


@dataclass(frozen=True)
class Job:
    """One episode to play: a task of the release at a failure rate and trial."""

    root: str
    task_rel: str
    failure_rate: float
    trial: int
    episode_id: str
    min_resistant_share: float = 0.0  # of the release (its manifest), for reports across releases
    run: str = ""


def run_label(label: str, env: EnvSettings) -> str:
    """The run's name: the agent, plus its budgets when they are not unlimited."""
    if env.query_budget == "unlimited" and env.check_budget == "unlimited":
        return label
    query = f"{env.query_budget}+{env.query_extra}" if env.query_budget == "paper" else env.query_budget
    check = f"{env.check_budget}x{env.check_alpha}" if env.check_budget == "paper" else env.check_budget
    return f"{label}@q={query},c={check}"


def prompt_sha256(spec: AgentSpec) -> str:
    """The SHA-256 of the prompt templates an LLM agent uses ("" for other agents)."""
    if spec.llm is None:
        return ""
    from gridbench.agents.llm import load_templates

    try:
        return load_templates(spec.llm.prompt_dir).sha256
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"agent.prompt_dir: {error}") from None


def identity(release: str, spec: AgentSpec, env: EnvSettings) -> dict[str, Any]:
    """Everything that changes the result of a run's episodes besides the task, the failure
    rate and the trial: the agent (its configuration; for an LLM the model, the server and
    the prompt) and the environment settings. (``_target_`` and ``kwargs`` are named for
    every agent, as the configuration mapping of earlier versions named them: the episode ids
    of an LLM run stay those it had.)"""
    agent: dict[str, Any] = {"_target_": spec.target, "kwargs": spec.kwargs or None, "name": spec.name}
    if spec.llm is not None:
        settings = asdict(spec.llm)
        agent.update((k, settings[k]) for k in sorted(settings) if k not in NOT_IN_EPISODE_ID)
        agent["base_url"] = str(spec.llm.base_url or "").rstrip("/") or None
        agent["prompt_sha256"] = prompt_sha256(spec)
    return {"release": release, "agent": spec.label, "config": agent, "env": asdict(env)}


def episode_id(task_rel: str, rate: float, trial: int, run_identity: dict[str, Any]) -> str:
    """A stable 16-hex-digit id of one episode: its task, failure rate and trial, and the
    run's identity (:func:`identity`)."""
    text = json.dumps([task_rel, rate, trial, run_identity], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_pair(job: Job) -> tuple[Task, Answer]:
    """The task and its answer, read as untrusted files (regular, bounded, not too deep); an
    answer that belongs to another task is an error."""
    root = Path(job.root)
    task = task_from_dict(_object(read_listed_json(root, job.task_rel), job.task_rel))
    answer_rel = "answers/" + job.task_rel[len("tasks/") :]
    answer = answer_from_dict(_object(read_listed_json(root, answer_rel), answer_rel))
    if answer.task_id != task.task_id:
        raise UserError(
            f"{job.task_rel}: its answer file is for task {answer.task_id}, not "
            f"{task.task_id}; the release is damaged (run make verify)"
        )
    return task, answer


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise UserError(f"{where}: not a JSON object; the release is damaged (run make verify)")
    return value


def episode_diagnostics(
    task: Task, answer: Answer, episode: Episode, turns: list[int] | None = None
) -> dict[str, Any]:
    """The trajectory diagnostics of a played episode (``pipeline/evaluation/diagnostics.py``)
    from its trace (``turns``: each call's model turn), with the budgets it left."""
    calls = read_calls(episode.trace or [], task.domain, turns)
    queries = list(episode.queries_left.values())
    return {
        **diagnose(task, answer, calls),
        "queries_left": None if UNLIMITED in queries else sum(queries),
        "checks_left": None if episode.checks_left == UNLIMITED else episode.checks_left,
    }


def episode_row(
    job: Job,
    spec: AgentSpec,
    env: EnvSettings,
    task: Task,
    episode: Episode,
    answer: Answer,
    extra: dict[str, Any],
    wall_ms: float,
    turns: list[int] | None = None,
) -> dict[str, Any]:
    """One results row (see the README's accounting table)."""
    result = score_episode(episode, answer)
    calls = result.pop("calls")
    end = extra.pop(
        "end_reason",
        "done"
        if episode.finished and not episode.truncated
        else "max_steps"
        if episode.truncated
        else "no_done",
    )
    return {
        "episode_id": job.episode_id,
        "release": Path(job.root).name,
        "task_id": task.task_id,
        "domain": task.domain,
        "hidden_slots": task.hidden_slots,
        "decoy_budget": task.decoy_budget,
        "run": job.run,
        "agent": run_label(spec.label, env),
        "policy": spec.name,
        "model": spec.model,
        "query_budget": str(env.query_budget),
        "check_budget": str(env.check_budget),
        "failure_rate": job.failure_rate,
        "trial": job.trial,
        "min_resistant_share": job.min_resistant_share,
        **result,
        "end_reason": end,
        **call_columns(calls, task.domain),
        "tool_call_counts": json.dumps(calls, sort_keys=True),
        **extra,
        "wall_ms": wall_ms,
        **episode_diagnostics(task, answer, episode, turns),
    }


def _episode(job: Job, env: EnvSettings, task: Task, record: bool) -> Episode:
    settings = EnvSettings(**{**asdict(env), "failure_rate": job.failure_rate})
    return Episode(task, settings, seed=job.trial, record=record)


def play_sync(args: tuple[Job, AgentSpec, EnvSettings, bool]) -> tuple[dict[str, Any], Any]:
    """A baseline or a synchronous custom agent on one episode (runs in a worker process)."""
    job, spec, env, record = args
    task, answer = load_pair(job)
    episode = _episode(job, env, task, True)  # the diagnostics read the trace; record: whether it is kept
    start = time.perf_counter()
    # The transcript grows by a few dicts per call and cyclic garbage collection rescans it
    # every few hundred allocations: 25% of a search episode's time. Episodes are bounded,
    # so collection waits for the episode's end.
    collecting = gc.isenabled()
    gc.disable()
    try:
        make_agent(spec).play(episode, random.Random(f"{task.task_id}|{spec.label}|{job.trial}"))
    finally:
        if collecting:
            gc.enable()
    wall_ms = (time.perf_counter() - start) * 1000.0
    row = episode_row(job, spec, env, task, episode, answer, {}, wall_ms)
    return row, (encode_transcript(row, episode.trace) if record else None)


async def play_async(
    jobs: list[Job], spec: AgentSpec, env: EnvSettings, store: RunStore, record: bool, progress: Progress
) -> None:
    """The LLM runner (or an async custom agent): ``concurrency`` episodes in flight. A key
    the server refuses, or a first batch of episodes that all end in ``api_error``, stops the
    run (:class:`RunStopped`): the episodes in flight are abandoned, to be played again."""
    agent = make_agent(spec)
    concurrency = max(1, spec.concurrency)
    gate = asyncio.Semaphore(concurrency)
    prompt = getattr(getattr(agent, "templates", None), "sha256", "")
    activity = getattr(agent, "activity", None)
    if activity is not None:
        progress.status = lambda: _activity_text(activity)
    progress.start_heartbeat()
    first_batch = min(concurrency, len(jobs))
    ended: list[str] = []  # end reasons of the first batch, in completion order

    async def one(job: Job) -> None:
        async with gate:
            task, answer = load_pair(job)
            episode = _episode(job, env, task, True)  # the diagnostics read the trace
            start = time.perf_counter()
            outcome = await agent.play(episode)
            wall_ms = (time.perf_counter() - start) * 1000.0
            extra = {**outcome.counters(), "prompt_sha256": prompt} if outcome is not None else {}
            turns = outcome.call_turns if outcome is not None else None
            row = episode_row(job, spec, env, task, episode, answer, extra, wall_ms, turns)
            transcript = outcome.messages if outcome is not None else episode.trace
            store.save(row, transcript if record else None)
            progress.update(row)
            if len(ended) < first_batch:
                ended.append(row["end_reason"])
                if len(ended) == first_batch and set(ended) == {"api_error"}:
                    raise RunStopped(_first_batch_failed(first_batch, row, spec))

    tasks = [asyncio.ensure_future(one(job)) for job in jobs]
    try:
        await asyncio.gather(*tasks)
    except (RunStopped, UserError) as error:
        for pending in tasks:
            pending.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if isinstance(error, RunStopped):
            raise
        raise RunStopped(str(error)) from None


def _first_batch_failed(count: int, row: dict[str, Any], spec: AgentSpec) -> str:
    """Why a run stops when its first batch of episodes all ended in ``api_error``."""
    which = "the first episode" if count == 1 else f"all {count} episodes of the first batch"
    return (
        f"{which} ended in api_error (the last: {str(row.get('api_error'))[:200]}); the run stops. "
        f"Check agent.base_url={spec.llm.base_url if spec.llm else None}, agent.model={spec.model} "
        "and the server; `make show` prints an episode's error"
    )


def _activity_text(activity: Any) -> str:
    """What an LLM agent is doing, for the progress line."""
    idle = time.monotonic() - activity.last_reply
    return (
        f"{activity.episodes} in flight, {activity.requests} requests open, {activity.turns} turns, "
        f"{activity.retries} retries, last reply {idle:.0f} s ago"
    )


def select_tasks(request: EvalRequest) -> list[str]:
    """Task files of the release that pass the filters; a filter matching nothing is an error."""
    release = request.release
    table = read_arrow_table(read_listed(release, "metadata.parquet"), "metadata.parquet")
    meta = pl.from_arrow(table)
    if not isinstance(meta, pl.DataFrame) or dict(meta.schema) != METADATA_SCHEMA:
        raise UserError(
            f"{shown(release)}/metadata.parquet: its columns are not the declared ones (make verify)"
        )
    for column, values in (
        ("domain", request.domains),
        ("hidden_slots", request.hidden_slots),
        ("decoy_budget", request.decoy_budgets),
    ):
        if values:
            known = sorted(set(meta[column].to_list()))
            meta = meta.filter(pl.col(column).is_in(list(values)))
            if not meta.height:
                raise UserError(
                    f"{column}={list(values)} matches no task of {release.name} (it has {column} in {known})"
                )
    return [f"tasks/{row['domain']}/{row['task_id']}.json" for row in meta.iter_rows(named=True)]


def plan(request: EvalRequest) -> list[Job]:
    """Every episode of the run (this shard's share of them), in a fixed order."""
    release, spec, env, shard = request.release, request.spec, request.env, request.shard
    config = read_manifest(release).get("config", {})
    generation = config.get("generation") if isinstance(config, dict) else None
    value = generation.get("min_resistant_share") if isinstance(generation, dict) else None
    # what the manifest says, when it is a share (a damaged manifest does not stop a run)
    share = float(value) if isinstance(value, int | float) and 0.0 <= value <= 1.0 else 0.0
    run_identity = identity(release.name, spec, env)
    jobs = [
        Job(
            str(release),
            rel,
            float(rate),
            trial,
            episode_id(rel, float(rate), trial, run_identity),
            share,
            request.run,
        )
        for rel in select_tasks(request)
        for rate in request.failure_rates
        for trial in range(request.trials)
    ]
    if shard is not None:  # by episode id: stable, and balanced across tasks and rates
        jobs = [job for job in jobs if int(job.episode_id, 16) % shard[1] == shard[0]]
    return jobs


def run_evaluation(request: EvalRequest) -> int:
    """Play every episode of the request that is not done yet. The exit code: 0, 3 when some
    episodes ended in ``api_error`` (a rerun retries them), 130 when interrupted (143 on SIGTERM); a stopped
    run raises :class:`RunStopped` (one line, exit 2). ``results.parquet`` is current after
    every one of them."""
    store = RunStore(request.folder, request.shard)
    jobs = plan(request)
    with store.lock():  # a second eval into the same run (and shard) is refused, not interleaved
        return _run(request, store, jobs)


def played_files_sha256(release: Path) -> str:
    """One digest of the task and answer files the release's manifest lists: a release rebuilt
    under the same name with other tasks (other settings, another seed) gets another one."""
    files = read_manifest(release)["files"]
    played = sorted(
        (name, digest) for name, digest in files.items() if name.startswith(("tasks/", "answers/"))
    )
    return hashlib.sha256(json.dumps(played).encode()).hexdigest()


def _run(request: EvalRequest, store: RunStore, jobs: list[Job]) -> int:
    """:func:`run_evaluation` with the run folder held. The folder's run is this one only if
    the release's tasks are the same files too (not only its name): the episode ids name the
    task by its path, so a release rebuilt under the same name with other tasks would
    otherwise resume as done, with the old tasks' results (hostile round 8)."""
    spec, env = request.spec, request.env
    held = {
        **identity(request.release.name, spec, env),
        "played_sha256": played_files_sha256(request.release),
    }
    store.claim(held)
    warning = duplicate_request_warning(spec)
    if warning:
        print(f"warning: {warning}", file=sys.stderr, flush=True)
    finished = store.finished() if request.resume else {}
    _name_skipped(store)
    todo = [job for job in jobs if job.episode_id not in finished]
    progress = Progress(len(todo), f"eval {request.run}")
    if not spec.is_async:  # the LLM runner's status is set, and its heartbeat started, with its agent
        busy = min(request.workers, len(todo))
        progress.status = lambda: f"{min(busy, progress.total - progress.done)} in flight"
        progress.start_heartbeat()
    start = time.perf_counter()
    try:
        _play(request, todo, store, progress)
    except KeyboardInterrupt as stop:
        progress.close()
        store.write_results()
        terminated = isinstance(stop, Terminated)  # SIGTERM
        # on stderr, as every command's line when a signal stops it (stdout is the results')
        return say_stopped(
            f"{stopped_by(terminated)}; {progress.done} episodes of this run saved in "
            f"{store.folder}, run the same command again to resume",
            143 if terminated else 130,
        )
    except BaseException:
        progress.close()
        store.write_results()
        raise
    progress.close()
    frame = store.write_results()
    ids = {job.episode_id for job in jobs}
    selected = frame.filter(pl.col("episode_id").is_in(list(ids)))
    _summary(request, store, selected, len(todo), len(jobs), time.perf_counter() - start)
    return _api_errors(store, ids)


def _play(request: EvalRequest, todo: list[Job], store: RunStore, progress: Progress) -> None:
    """Play the episodes: the async agent's coroutines, or the baselines' process pool."""
    spec, env = request.spec, request.env
    if spec.is_async:
        asyncio.run(play_async(todo, spec, env, store, request.traces, progress))
        return
    work = [(job, spec, env, request.traces) for job in todo]
    for row, trace in parallel_imap(play_sync, work, request.workers, "", ordered=False, show=False):
        store.save(row, trace)
        progress.update(row)


def _api_errors(store: RunStore, ids: set[str]) -> int:
    """0, or :data:`API_ERRORS_EXIT` after one line saying how many selected episodes ended in
    ``api_error`` and are not scored."""
    failed = store.unanswered() & ids
    if not failed:
        return 0
    print(
        f"error: {len(failed)} of {len(ids)} episodes ended in api_error and are not scored "
        f'(their errors: {store.api_errors}; `make show ARGS="run={store.folder} task=ID"` prints '
        "one); run the same command again to retry them",
        file=sys.stderr,
    )
    return API_ERRORS_EXIT


def duplicate_request_warning(spec: AgentSpec) -> str:
    """A warning when the LLM runner would retry requests against a local server: such
    servers (llama.cpp, Ollama, LM Studio) go on with a request the client gave up on, so a
    retry after a time-out queues a duplicate ("" when there is nothing to warn about)."""
    if spec.llm is None or not spec.llm.max_retries:
        return ""
    from urllib.parse import urlsplit

    host = (urlsplit(str(spec.llm.base_url or "")).hostname or "").lower()
    local = host in ("localhost", "0.0.0.0", "::1") or host.endswith(".local")
    local = local or host.startswith(("127.", "10.", "192.168.")) or host.startswith("172.")
    if not local:
        return ""
    return (
        f"agent.max_retries={spec.llm.max_retries} against a local server ({host}): a server "
        "that goes on with a request the client gave up on (llama.cpp, Ollama, LM Studio) gets a "
        "duplicate queued behind it at every retry after a time-out; for a slow local server use "
        "agent=llm_local (concurrency 1, a 900 s timeout, no retries)"
    )


def _name_skipped(store: RunStore) -> None:
    """Say which stored rows could not be read back (their episodes are played again)."""
    for line in store.skipped[:5]:
        print(f"warning: {store.folder.name}/{line}; skipped, its episode is played again", file=sys.stderr)
    if len(store.skipped) > 5:
        print(f"warning: {len(store.skipped) - 5} more rows skipped", file=sys.stderr)


def _summary(
    request: EvalRequest, store: RunStore, frame: pl.DataFrame, new: int, total: int, seconds: float
) -> None:
    """The end-of-run lines: this command's episodes only (the selected ones of the folder)."""
    print(
        f"{request.run} on {request.release.name}: {new} episodes run, {total - new} already done, "
        f"{seconds:.1f}s -> {store.results}"
    )
    if frame.height:
        summary = frame.group_by("failure_rate").agg(pl.col("success").mean(), pl.len())
        for row in summary.sort("failure_rate").iter_rows(named=True):
            print(
                f"  failure rate {row['failure_rate']}: success {row['success']:.3f} over {row['len']} "
                f"of the {total // max(len(request.failure_rates), 1)} selected episodes"
            )


def ideal_calls(pairs: Sequence[tuple[Task, Answer]]) -> pl.DataFrame:
    """Play the ideal agent (``budget_aware``, the paper's budgets, no tool failures) on every
    (task, answer): its tool calls and success per task."""
    import random

    from gridbench.agents.budget_aware import BudgetAwareAgent
    from gridbench.env import EnvSettings, Episode, score_episode

    rows = []
    for task, answer in pairs:
        episode = Episode(task, EnvSettings(query_budget="paper", check_budget="paper"), seed=0)
        BudgetAwareAgent().play(episode, random.Random(0))
        graded = score_episode(episode, answer)
        rows.append(
            {
                "domain": task.domain,
                "hidden_slots": task.hidden_slots,
                "decoy_budget": task.decoy_budget,
                "failure_rate": 0.0,
                "steps": graded["steps"],
                "success": graded["success"],
            }
        )
    return pl.DataFrame(rows)
