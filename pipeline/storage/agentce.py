"""Reading the reference implementation's data format (AgentCE-Bench) into our task model.

One JSON file per domain holds ``instances``; each has ``instance_id``, ``meta``,
``global_constraints`` (rule name -> bound), ``item_pool`` (id -> record), ``truth_solution``,
``partial_solution``, ``hidden_slots`` and ``slots`` (``truth_id``, ``slot_constraints``,
``candidate_ids``, ``decoy_ids``, ``filter_candidate_ids``). Its rule names map onto our rule
kinds through the table below; an unknown name is an error that names it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from domains import get_domain
from gridbench_core.task import Answer, GlobalRule, Slot, SlotRoles, SlotRule, Task, TaskFormatError
from gridbench_core.vocabulary import RuleKind
from pipeline.generation.instruction import write_instruction
from pipeline.generation.keys import TaskKey
from pipeline.storage.card import DataLicence
from pipeline.storage.safe import load_json, read_user_file

SOURCE_DEPTH = 16  # file > instances > instance > slots > slot > constraints > ...: 7 in practice

# domain -> (id field, slot rules {name: (attribute, op)}, global rules {name: (kind, attribute, extra)})
REFERENCE: dict[str, tuple[str, dict[str, tuple[str, str]], dict[str, tuple[str, str, dict]]]] = {
    "course": (
        "course_id",
        {
            "max_difficulty": ("difficulty", "<="),
            "min_credits": ("credits", ">="),
            "max_price": ("price", "<="),
        },
        {
            "total_credits_min": (RuleKind.SUM_MIN, "credits", {}),
            "total_price_max": (RuleKind.SUM_MAX, "price", {}),
            "same_teacher_week_max": (RuleKind.REPEAT_MAX, "teacher", {}),
            "same_category_week_max": (RuleKind.REPEAT_MAX, "category", {}),
            "total_workload_max": (RuleKind.SUM_MAX, "workload", {}),
        },
    ),
    "meal": (
        "dish_id",
        {"max_calories": ("calories", "<="), "min_protein": ("protein", ">="), "max_price": ("price", "<=")},
        {
            "weekly_calories_max": (RuleKind.SUM_MAX, "calories", {}),
            "weekly_protein_min": (RuleKind.SUM_MIN, "protein", {}),
            "same_cuisine_max": (RuleKind.REPEAT_MAX, "cuisine", {}),
            "same_chef_max": (RuleKind.REPEAT_MAX, "chef", {}),
            "weekly_price_max": (RuleKind.SUM_MAX, "price", {}),
            "weekly_spiciness_max": (RuleKind.SUM_MAX, "spiciness", {}),
        },
    ),
    "pc_build": (
        "component_id",
        {
            "max_price": ("price", "<="),
            "min_performance": ("performance", ">="),
            "max_power": ("power", "<="),
        },
        {
            "total_budget_max": (RuleKind.SUM_MAX, "price", {}),
            "total_power_max": (RuleKind.SUM_MAX, "power", {}),
            "same_brand_max": (RuleKind.REPEAT_MAX, "brand", {}),
            "same_category_max": (RuleKind.REPEAT_MAX, "category", {}),
            "high_performance_min": (RuleKind.COUNT_MIN_THRESHOLD, "performance", {"at_least": 75}),
            "total_compatibility_min": (RuleKind.SUM_MIN, "compatibility", {}),
        },
    ),
    "shopping": (
        "product_id",
        {"max_price": ("price", "<="), "min_calories": ("calories", ">="), "min_protein": ("protein", ">=")},
        {
            "weekly_budget_max": (RuleKind.SUM_MAX, "price", {}),
            "weekly_calories_min": (RuleKind.SUM_MIN, "calories", {}),
            "weekly_protein_min": (RuleKind.SUM_MIN, "protein", {}),
            "same_brand_max": (RuleKind.REPEAT_MAX, "brand", {}),
            "weekly_weight_max": (RuleKind.SUM_MAX, "weight", {}),
            "same_category_max": (RuleKind.REPEAT_MAX, "category", {}),
        },
    ),
    "travel": (
        "activity_id",
        {"max_cost": ("cost", "<="), "max_duration": ("duration", "<="), "max_crowd": ("crowd_level", "<=")},
        {
            "total_budget_max": (RuleKind.SUM_MAX, "cost", {}),
            "museum_min": (RuleKind.COUNT_MIN, "category", {"equals": "museum"}),
            "outdoor_min": (RuleKind.COUNT_MIN, "category", {"equals": "outdoor"}),
            "location_repeat_max": (RuleKind.REPEAT_MAX, "location", {}),
            "daily_duration_max": (RuleKind.SUM_MAX, "duration", {"scope": "row"}),
            "rating_total_min": (RuleKind.SUM_MIN, "rating", {}),
        },
    ),
    "workforce": (
        "worker_id",
        {
            "min_skill": ("skill", ">="),
            "max_cost": ("hourly_cost", "<="),
            "min_experience": ("experience", ">="),
        },
        {
            "total_cost_max": (RuleKind.SUM_MAX, "hourly_cost", {}),
            "total_skill_min": (RuleKind.SUM_MIN, "skill", {}),
            "senior_shift_min": (RuleKind.COUNT_MIN_THRESHOLD, "experience", {"at_least": 12}),
            "same_department_week_max": (RuleKind.REPEAT_MAX, "department", {}),
            "total_reliability_min": (RuleKind.SUM_MIN, "reliability", {}),
            "total_overtime_min": (RuleKind.SUM_MIN, "overtime_capacity", {}),
        },
    ),
}

FILE_FIELDS = ("domain", "rows", "cols", "instances")
INSTANCE_FIELDS = (
    "instance_id",
    "meta",
    "global_constraints",
    "item_pool",
    "truth_solution",
    "partial_solution",
    "slots",
)


MAX_SOURCE_BYTES = 256 * 1024 * 1024  # one reference file (the 5x5 ones: 2.6 MB)


def read_file(path: Path) -> dict[str, Any]:
    """An AgentCE dataset file's content; a clear error when it is unreadable or not such a
    file. It is untrusted input: a regular file (no link, FIFO or device), at most
    :data:`MAX_SOURCE_BYTES`, JSON no deeper than the format needs."""
    data = load_json(read_user_file(path, MAX_SOURCE_BYTES), str(path), SOURCE_DEPTH)
    if not isinstance(data, dict):
        raise TaskFormatError(f"{path}: expected an object with 'instances'")
    for name in FILE_FIELDS:
        if name not in data:
            raise TaskFormatError(f"{path}: missing field {name!r} (not an AgentCE dataset file)")
    if not isinstance(data["instances"], list):
        raise TaskFormatError(f"{path}: 'instances' must be a list")
    if not isinstance(data["domain"], str) or data["domain"] not in REFERENCE:
        raise TaskFormatError(
            f"{path}: domain {str(data['domain'])[:40]!r} has no mapping; known: {sorted(REFERENCE)}"
        )
    return data


def convert(domain: str, instance: Any, index: int, origin: str) -> tuple[TaskKey, Task, Answer]:
    """One reference instance -> (key, task, answer with empty certificate); an instance of
    the wrong shape is a :class:`TaskFormatError` naming it, never a crash."""
    if not isinstance(instance, dict):
        raise TaskFormatError(f"{origin} instance {index}: not a JSON object")
    try:
        return _convert(domain, instance, index, origin)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as error:
        if isinstance(error, TaskFormatError):
            raise
        raise TaskFormatError(
            f"{origin} instance {index}: malformed ({type(error).__name__}: {str(error)[:120]})"
        ) from None


def _convert(domain: str, instance: dict[str, Any], index: int, origin: str) -> tuple[TaskKey, Task, Answer]:
    where = f"{origin} instance {str(instance.get('instance_id', index))[:80]}"
    for name in INSTANCE_FIELDS:
        if name not in instance:
            raise TaskFormatError(f"{where}: missing field {name!r}")
    id_field, slot_table, global_table = REFERENCE[domain]
    meta = instance["meta"]
    hidden = [s for s in instance["slots"] if s.get("is_hidden", True)]
    slots, roles = [], []
    for slot in hidden:
        rules = slot["slot_constraints"]
        constraints = []
        for name in rules.get("active_rule_names", []):
            if name not in slot_table:
                raise TaskFormatError(f"{where}: unknown slot rule {name!r}; known: {sorted(slot_table)}")
            attribute, op = slot_table[name]
            constraints.append(SlotRule(attribute, op, int(rules[name])))
        slots.append(
            Slot(int(slot["row"]), int(slot["col"]), tuple(slot["candidate_ids"]), tuple(constraints))
        )
        roles.append(
            SlotRoles(
                int(slot["row"]),
                int(slot["col"]),
                str(slot["truth_id"]),
                tuple(slot.get("decoy_ids", [])),
                tuple(slot.get("filter_candidate_ids", [])),
            )
        )
    rules = []
    for name, bound in instance["global_constraints"].items():
        if name == "global":
            continue
        if name not in global_table:
            raise TaskFormatError(f"{where}: unknown global rule {name!r}; known: {sorted(global_table)}")
        kind, attribute, extra = global_table[name]
        rules.append(
            GlobalRule(
                name,
                kind,
                attribute,
                int(bound),
                extra.get("scope", "grid"),
                extra.get("equals"),
                extra.get("at_least"),
            )
        )
    grid = tuple(tuple(row) for row in instance["partial_solution"])
    used = {i for row in grid for i in row if i is not None} | {c for s in slots for c in s.candidates}
    pool = instance["item_pool"]
    items = {}
    for item_id in sorted(used):
        if item_id not in pool:
            raise TaskFormatError(f"{where}: item {item_id!r} is not in item_pool")
        record = {k: v for k, v in pool[item_id].items() if k != id_field}
        items[item_id] = {"id": item_id, "name": str(record.pop("name", item_id)), **record}
    rows, cols = len(grid), len(grid[0]) if grid else 0
    budget, per_slot = int(meta.get("branch_budget", 0)), int(meta.get("candidates_per_slot", 0))
    instruction = write_instruction(
        get_domain(domain), rows, cols, rules, {(s.row, s.col): list(s.constraints) for s in slots}
    )
    task = Task(
        str(instance["instance_id"]),
        domain,
        rows,
        cols,
        budget,
        grid,
        items,
        tuple(slots),
        tuple(rules),
        instruction,
        per_slot,
        {"origin": origin, "source_instruction": str(instance.get("task_instruction", ""))},
    )
    answer = Answer(task.task_id, tuple(tuple(row) for row in instance["truth_solution"]), tuple(roles))
    key = TaskKey(domain, rows, cols, len(slots), budget, per_slot, 0, index)
    return key, task, answer


SOURCE = "AgentCE-Bench (https://github.com/uservan/AgentCE_Bench)"


def licence_of(text: str) -> DataLicence:
    """The licence of imported data from its text (copied verbatim into the release): the
    SPDX id, the card's attribution naming its copyright line, and the card's paragraphs.
    ``verify`` rebuilds an imported release's card from its ``LICENSE`` with this."""
    first = text.strip().splitlines()[0].strip() if text.strip() else ""
    spdx = "mit" if first.upper().startswith("MIT LICENSE") else "other"
    holder = next((line.strip() for line in text.splitlines() if line.strip().startswith("Copyright")), "")
    statement = (
        f"The instances come from {SOURCE}, {holder or 'its authors'}, published under "
        f"{'the MIT licence' if spdx == 'mit' else 'the licence'} reproduced in `LICENSE`; "
        "that licence applies to this release. gridbench converted them to its format, "
        "re-certified every answer, and wrote the instructions anew (the source text is kept "
        "in each task's `source_instruction`)."
    )
    about = (
        "These instances were generated by the reference implementation, not by gridbench:\n"
        "its decoys are made to break a grid-wide rule, and the audit below shows how far the\n"
        "candidates alone give the truth away. gridbench re-proved every answer unique."
    )
    public = "This release is **public**: its answers are in `answers/` and `data/answers.parquet`."
    return DataLicence(spdx, text, statement, about, public)
