"""Validation during training: a fixed slice of certified tasks played every N steps by the
model being trained, through the agent loop of ``make eval`` (:func:`play_chat`), with success
by H, by B, by (H, B) and by reasoning depth logged to the trainer's logger.

    from gridbench.adapters.validation import ValidationCallback, validation_slice

    tasks = validation_slice(domains=["course", "meal"], hidden_slots=[5, 11], decoy_budgets=[4, 15])
    trainer = GRPOTrainer(...)  # or any transformers.Trainer
    trainer.add_callback(ValidationCallback(tasks, every=50, trainer=trainer))

The callback is a ``transformers.TrainerCallback``: on every ``every``-th step (and, with
``at_start``, before the first) it plays each task of the slice with the trainer's ``model``
and ``processing_class`` (:func:`hf_chat`; or the ``chat`` function it was given), then calls
``trainer.log`` with the metrics (so every logger the trainer reports to gets them); without a
trainer it appends them to ``state.log_history``. Its ``history`` keeps every validation's
metrics and per-task rows.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from transformers import TrainerCallback

from gridbench.adapters.core import Session, env_settings
from gridbench.agents.llm.chat import Chat, hf_chat, play_chat
from gridbench.agents.llm.loop import LoopSettings
from gridbench_core.errors import UserError

MAX_SLICE = 10_000


def validation_slice(
    release: str | None = None,
    domains: str | Sequence[str] = ("course", "meal", "pc_build", "shopping", "travel", "workforce"),
    grid: str = "5x7",
    hidden_slots: Sequence[int] | None = None,
    decoy_budgets: Sequence[int] | None = None,
    per_cell: int = 2,
    seed: int = 0,
) -> list[Any]:
    """A fixed slice: ``per_cell`` certified tasks per (H, B), domains taken in turn. From a
    release (its first tasks of each cell; every H and B it holds unless given), or generated
    and certified here (``seed``; ``create_dataset``'s tasks, certified as a release's; H in
    5, 11, 21 and B in 0, 8, 25 unless given)."""
    if isinstance(per_cell, bool) or not isinstance(per_cell, int) or not 1 <= per_cell <= 1_000:
        raise UserError(f"per_cell={per_cell!r}: need a whole number in 1..1000")
    names = (domains,) if isinstance(domains, str) else tuple(domains)
    if release is not None:
        from gridbench.adapters.core import select

        hs, bs = (None if v is None else list(v) for v in (hidden_slots, decoy_budgets))
        records = select(release, list(names), hs, bs)
        cells: dict[tuple[int, int], list[Any]] = defaultdict(list)
        for record in records:
            if len(cells[(record.hidden_slots, record.decoy_budget)]) < per_cell:
                cells[(record.hidden_slots, record.decoy_budget)].append(record)
        return [item for key in sorted(cells) for item in cells[key]]
    from gridbench.procedural import create_dataset
    from pipeline.generation.dataset import Level

    levels = [Level((h,), (b,)) for h in hidden_slots or (5, 11, 21) for b in decoy_budgets or (0, 8, 25)]
    if not levels or len(levels) * per_cell > MAX_SLICE:
        raise UserError(
            f"validation_slice: give 1..{MAX_SLICE} tasks (hidden_slots x decoy_budgets x per_cell)"
        )
    dataset = create_dataset(list(names), size=len(levels) * per_cell, seed=seed, grid=grid, levels=levels)
    return list(dataset)


def _cell(item: Any) -> tuple[int, int, str]:
    measures = item.answer.get("measures") or {}
    depth = (measures.get("depth") or {}).get("name", "?")
    return int(item.task["hidden_slots"]), int(item.task["decoy_budget"]), str(depth)


def validate(
    tasks: Sequence[Any],
    chat: Chat,
    failure_rate: float = 0.0,
    query_budget: str | int = "unlimited",
    check_budget: str | int = "unlimited",
    max_steps: int = 200,
    max_turns: int | None = None,
    max_reminders: int | None = None,
    prefix: str = "gridbench",
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Play every task once with ``chat`` (episode seed 0): the metrics (``{prefix}/success``,
    ``{prefix}/fraction_correct``, ``{prefix}/success/H=h``, ``.../B=b``, ``.../H=h,B=b``,
    ``.../depth=name``, ``{prefix}/episodes``) and one row per task (score and loop counts)."""
    settings = env_settings(failure_rate, query_budget, check_budget, max_steps)
    limits = LoopSettings.from_llm()
    loop = LoopSettings(
        max_turns if max_turns is not None else limits.max_turns,
        max_reminders if max_reminders is not None else limits.max_reminders,
    )
    rows = []
    for item in tasks:
        session = Session(item.task, item.answer, settings, seed=0)
        outcome = play_chat(session.episode, chat, loop)
        hidden, budget, depth = _cell(item)
        counts = {k: v for k, v in outcome.counters().items() if k != "api_error"}
        rows.append(
            {"task_id": session.task_id, "hidden_slots": hidden, "decoy_budget": budget, "depth": depth}
            | session.score()
            | counts
        )
    return metrics_of(rows, prefix), rows


def metrics_of(rows: Sequence[dict[str, Any]], prefix: str = "gridbench") -> dict[str, float]:
    """Mean success overall, by H, by B, by (H, B) and by depth; mean fraction correct."""
    if not rows:
        return {}
    groups: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        success = float(row["success"])
        for key in (
            "",
            f"/H={row['hidden_slots']}",
            f"/B={row['decoy_budget']}",
            f"/H={row['hidden_slots']},B={row['decoy_budget']}",
            f"/depth={row['depth']}",
        ):
            groups[f"{prefix}/success{key}"].append(success)
    out = {key: statistics.fmean(values) for key, values in sorted(groups.items())}
    out[f"{prefix}/fraction_correct"] = statistics.fmean(float(r["fraction_correct"]) for r in rows)
    out[f"{prefix}/episodes"] = float(len(rows))
    return out


class ValidationCallback(TrainerCallback):
    """Every ``every`` steps, play ``tasks`` with the model being trained and log success by H,
    B and depth (see the module docstring). ``chat``: a chat function to use instead of the
    trainer's model (a scripted model, a server); ``max_new_tokens``: per reply of the model;
    the episode options are the adapters' (``failure_rate``, budgets, ``max_steps``,
    ``max_turns``, ``max_reminders``)."""

    def __init__(
        self,
        tasks: Sequence[Any],
        every: int = 100,
        trainer: Any = None,
        chat: Chat | None = None,
        at_start: bool = False,
        max_new_tokens: int = 256,
        prefix: str = "gridbench",
        **episode: Any,
    ) -> None:
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise UserError(f"every={every!r}: need a whole number of steps >= 1")
        if not tasks or not all(hasattr(t, "task") and hasattr(t, "answer") for t in tasks):
            raise UserError(
                "tasks: give a non-empty list of tasks with .task and .answer (validation_slice())"
            )
        unknown = sorted(
            set(episode)
            - {"failure_rate", "query_budget", "check_budget", "max_steps", "max_turns", "max_reminders"}
        )
        if unknown:
            raise UserError(f"{unknown[0]}: not an episode option of the validation callback")
        self.tasks, self.every, self.trainer, self.chat = list(tasks), every, trainer, chat
        self.at_start, self.max_new_tokens, self.prefix, self.episode = (
            at_start,
            max_new_tokens,
            prefix,
            episode,
        )
        self.history: list[dict[str, Any]] = []

    def _chat(self, model: Any, processing_class: Any) -> Chat:
        if self.chat is not None:
            return self.chat
        if model is None or processing_class is None:
            raise UserError("the validation callback needs the trainer's model and tokenizer, or chat=")
        return hf_chat(model, processing_class, self.max_new_tokens)

    def run(self, state: Any, model: Any = None, processing_class: Any = None) -> dict[str, float]:
        """Validate now: play the slice, log the metrics, keep them in ``history``."""
        training = bool(getattr(model, "training", False))
        if model is not None and hasattr(model, "eval"):
            model.eval()
        try:
            metrics, rows = validate(
                self.tasks, self._chat(model, processing_class), prefix=self.prefix, **self.episode
            )
        finally:
            if training:
                model.train()
        self.history.append({"step": state.global_step, "metrics": metrics, "rows": rows})
        if self.trainer is not None:
            self.trainer.log(dict(metrics))
        else:
            state.log_history.append({**metrics, "step": state.global_step})
        return metrics

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """With ``at_start``: a validation before the first step (the model as it came)."""
        if self.at_start:
            self.run(state, kwargs.get("model"), kwargs.get("processing_class"))

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Every ``every`` steps: a validation."""
        if state.global_step % self.every == 0:
            self.run(state, kwargs.get("model"), kwargs.get("processing_class"))


__all__ = ["ValidationCallback", "metrics_of", "validate", "validation_slice"]
