"""Verify re-derives every difficulty measure an answer claims: the reasoning depth (rung,
name, and the options each rung leaves), the finer effort measures, propagation, the search
space, shallow decoys, decoy directions, the canonical search's nodes and the distance to
ambiguity. The ladder is cheap beside the certificate; the distance is one CP-SAT solve (the
claimed rule loosened by the claimed units must admit a second completion, and no loosening
of any rule by fewer units may). A mismatch is one line naming the claim, what it says and
what the files give. The metadata's columns are checked against the answer file elsewhere,
so a lie there is caught too."""

from __future__ import annotations

import dataclasses
from typing import Any

from gridbench_core.records import Measures
from gridbench_core.task import Answer, Task
from pipeline.generation.measures import (
    SEARCH_NODE_LIMIT,
    CanonicalSearch,
    decoy_direction,
    search_space,
    shallow_decoys,
)
from solvers.cpsat import CpSatModel
from solvers.ladder import RUNGS, joint_bits, reasoning_depth, search_nodes
from solvers.propagation import decoy_resistance
from solvers.results import FEASIBLE, INFEASIBLE, SolverSettings


def _differs(what: str, claimed: Any, found: Any) -> str:
    return f"measures.{what} claims {str(claimed)[:80]} but the task gives {str(found)[:80]}"


def measure_claims(
    task: Task, answer: Answer, solver: SolverSettings, model: CpSatModel | None = None
) -> list[str]:
    """Every difficulty claim of ``answer`` that the task's files do not give (empty when all
    hold, or when the answer claims no measures); ``model``: the task's CP-SAT model with the
    answer's truth (built when not given)."""
    claimed = answer.measures
    if claimed is None:
        return []
    problems = _depth(task, claimed) + _counts(task, answer, claimed)
    problems += _search(task, claimed) + _distance(task, answer, claimed, solver, model)
    return problems


def _depth(task: Task, claimed: Measures) -> list[str]:
    out = []
    depth = claimed.depth
    if depth is not None:
        if not 0 <= depth.rung < len(RUNGS) or depth.name != RUNGS[depth.rung]:
            out.append(
                f"measures.depth names rung {str(depth.rung)[:8]} {str(depth.name)[:20]!r}, not a rung"
            )
        found = reasoning_depth(task)
        if (depth.rung, depth.name, list(depth.open_after)) != (found.rung, found.name, found.open_after):
            out.append(
                _differs(
                    "depth",
                    f"{depth.name} (open after each rung {list(depth.open_after)})",
                    f"{found.name} ({found.open_after})",
                )
            )
    effort = claimed.effort
    if effort is not None:
        limit = effort.search_nodes if effort.search_capped else max(effort.search_nodes, SEARCH_NODE_LIMIT)
        nodes, capped = search_nodes(task, limit)
        if (nodes, capped) != (effort.search_nodes, effort.search_capped):
            out.append(
                _differs("effort.search_nodes", (effort.search_nodes, effort.search_capped), (nodes, capped))
            )
        bits = joint_bits(task)
        if abs(bits - effort.joint_bits) > 1e-6:
            out.append(_differs("effort.joint_bits", effort.joint_bits, bits))
    return out


def _counts(task: Task, answer: Answer, claimed: Measures) -> list[str]:
    decoys = {(role.row, role.col): list(role.decoys) for role in answer.roles}
    found = {
        "search_space": search_space(answer),
        "shallow_decoys": shallow_decoys(task, answer),
        "propagation": dataclasses.asdict(decoy_resistance(task, decoys)),
        "decoy_direction": decoy_direction(task, answer),
    }
    said = {
        "search_space": claimed.search_space,
        "shallow_decoys": claimed.shallow_decoys,
        "propagation": dataclasses.asdict(claimed.propagation),
        "decoy_direction": claimed.decoy_direction,
    }
    return [_differs(name, said[name], value) for name, value in found.items() if said[name] != value]


def _search(task: Task, claimed: Measures) -> list[str]:
    """The canonical search (its whole tree), counted to the claimed number of nodes and one
    more; a capped claim is the limit it was counted to and one more (``CanonicalSearch.run``),
    so it is counted to one node fewer than it claims, and must stop there. (Counted to the
    claimed number, a tree of exactly limit + 1 nodes was uncapped: one task in 100,000 of the
    training set failed verify.)"""
    if claimed.dfs_nodes < (1 if claimed.dfs_capped else 0):
        return [_differs("dfs_nodes", (claimed.dfs_nodes, claimed.dfs_capped), "a count of at least 0")]
    limit = claimed.dfs_nodes - 1 if claimed.dfs_capped else claimed.dfs_nodes + 1
    nodes, completions, capped = CanonicalSearch(task, limit).run()
    if capped != claimed.dfs_capped or (not capped and nodes != claimed.dfs_nodes):
        return [_differs("dfs_nodes", (claimed.dfs_nodes, claimed.dfs_capped), (nodes, capped))]
    if not capped and completions != 1:
        return [f"measures.dfs_nodes: the canonical search's tree holds {completions} completions, not one"]
    return []


def _distance(
    task: Task,
    answer: Answer,
    claimed: Measures,
    solver: SolverSettings,
    model: CpSatModel | None = None,
) -> list[str]:
    distance = claimed.distance_to_ambiguity
    model = model or CpSatModel(task, solver, answer.truth_choice())
    best = model.least_loosening_to_ambiguity()
    if best.status not in (FEASIBLE, INFEASIBLE):
        return [f"measures.distance_to_ambiguity: the solve returned {best.status} (not checked)"]
    found = best.objective if best.status == FEASIBLE else None
    if distance.units != found:
        return [_differs("distance_to_ambiguity.units", distance.units, found)]
    if distance.units is None:
        return [] if distance.rule is None else [_differs("distance_to_ambiguity.rule", distance.rule, None)]
    rules = {rule.name: rule for rule in task.global_constraints}
    rule = rules.get(str(distance.rule))
    if rule is None:
        return [_differs("distance_to_ambiguity.rule", distance.rule, "no rule of that name")]
    share = round(distance.units / rule.bound, 6) if rule.bound else None
    if share != distance.share:
        return [_differs("distance_to_ambiguity.share", distance.share, share)]
    own = model.loosening_to_ambiguity(rule.name)
    if own.status != FEASIBLE or own.objective != distance.units:
        return [
            _differs("distance_to_ambiguity.rule", f"{rule.name} loosened by {distance.units}", own.status)
        ]
    return []
