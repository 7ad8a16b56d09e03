#!/usr/bin/env python3
"""The outside audit of 2026-12 (truth-leak round 3), kept as a bench.

Width-only joint reader ("blocked box"): reads ONLY each window's width R = sum_max - sum_min and the
candidates' values -- never where a window lies (lo/hi), never the visible cells, never a total.

Mechanism (pipeline/generation/repair.py tighten/_least_cut, resist.py _widest, bounds.py):
every window's width R is the radius of the *virtual* window [T-R, T+R] centred on the truth's
total T. Repair narrows R to gap-1 to exclude a counterexample; loosening (cages: cage_loosen; any
min_depth above one_round: loosen_for_resistance) widens R until the next completion is hit and stops at
gap-1. Hence, for the truth completion X* (and rarely for others):
  (a) its virtual box  {Y : |S_w(Y) - S_w(X*)| <= R_w for every window w}  holds no other completion
      (windows only; one-sided rules may exclude some Y, so this is approximate), and
  (b) for a window w whose width was set by repair/loosening there is a 'blocker' Y with
      |S_w(Y) - S_w(X*)| == R_w + 1 and |S_v(Y) - S_v(X*)| <= R_v on every other window v.
The reader enumerates the completions of the hidden cells with >= 2 locally valid candidates (up to
LIMIT), scores each by (a) and the number of windows with a blocker (b), and votes per cell among the
best-scoring completions. Answers are read only to score.
usage: repro_blocked.py RELEASE_DIR [...]     (tasks whose completion space exceeds LIMIT count at chance)
"""

import glob
import itertools
import json
import os
import sys

import numpy as np

LIMIT = 6000


def passes(rec, cons):
    for c in cons:
        v, op, t = rec[c["attribute"]], c["op"], c["value"]
        if (
            (op == "<=" and v > t)
            or (op == ">=" and v < t)
            or (op == "in" and v not in t)
            or (op == "not_in" and v in t)
        ):
            return False
    return True


def windows(task):
    by = {}
    for r in task["global_constraints"]:
        if r["kind"] in ("sum_min", "sum_max") and r["scope"] in ("grid", "cells"):
            key = (r["attribute"], r["scope"], tuple(map(tuple, r.get("cells") or [])))
            by.setdefault(key, {})[r["kind"]] = r["bound"]
    return [(a, s, set(cells), d["sum_max"] - d["sum_min"]) for (a, s, cells), d in by.items() if len(d) == 2]


acc, chance, group, covered = [], [], [], 0
for rdir in sys.argv[1:]:
    for f in sorted(glob.glob(os.path.join(rdir, "tasks", "*", "*.json"))):
        task = json.load(open(f))
        items = task["items"] if isinstance(task["items"], dict) else {it["id"]: it for it in task["items"]}
        truth = json.load(open(f.replace("/tasks/", "/answers/")))["truth"]  # scoring only
        ws = windows(task)
        multi = []
        for s in task["slots"]:
            lv = [c for c in s["candidates"] if passes(items[c], s["constraints"])]
            if len(lv) >= 2:
                multi.append(((s["row"], s["col"]), lv))
        if not multi:
            continue
        N = int(np.prod([len(lv) for _, lv in multi]))
        votes = None
        if ws and N <= LIMIT:
            covered += 1
            idx = np.array(list(itertools.product(*[range(len(lv)) for _, lv in multi])))
            S = np.zeros((N, len(ws)))
            for j, (cell, lv) in enumerate(multi):
                V = np.array(
                    [
                        [
                            items[i][a] if (scope == "grid" or cell in cells) else 0
                            for a, scope, cells, _ in ws
                        ]
                        for i in lv
                    ],
                    float,
                )
                S += V[idx[:, j]]
            Rw = np.array([R for *_, R in ws], float) + float(
                os.environ.get("CONTROL_SHIFT", "0")
            )  # control: widths off by k
            score = np.zeros(N)
            for a in range(0, N, 300):
                D = np.abs(S[a : a + 300, None, :] - S[None, :, :])
                inside = D <= Rw
                score[a : a + 300] += 100 * (inside.all(2).sum(1) == 1)  # (a) empty virtual box
                for wi in range(len(ws)):  # (b) blockers
                    others = (
                        np.delete(inside, wi, axis=2).all(2)
                        if len(ws) > 1
                        else np.ones(inside.shape[:2], bool)
                    )
                    score[a : a + 300] += (others & (D[:, :, wi] == Rw[wi] + 1)).any(1)
            best = idx[score == score.max()]
            votes = [np.bincount(best[:, j], minlength=len(lv)) for j, (_, lv) in enumerate(multi)]
        for j, (cell, lv) in enumerate(multi):
            t = lv.index(truth[cell[0]][cell[1]])
            v = votes[j] if votes is not None else np.zeros(len(lv))
            top = v == v.max()
            acc.append(top[t] / top.sum())
            chance.append(1 / len(lv))
            group.append(f)
acc, chance, group = np.array(acc), np.array(chance), np.array(group)
d = acc - chance
ug, inv = np.unique(group, return_inverse=True)
gs, gn = np.bincount(inv, weights=d), np.bincount(inv).astype(float)
idx = np.random.default_rng(0).integers(0, len(ug), (2000, len(ug)))
bs = gs[idx].sum(1) / gn[idx].sum(1)
print(
    f"cells={len(acc)} tasks={len(ug)} tasks_enumerated={covered} acc={acc.mean():.4f} "
    f"chance={chance.mean():.4f} "
    f"diff={d.mean():+.4f} 95%CI=[{np.percentile(bs, 2.5):+.4f},{np.percentile(bs, 97.5):+.4f}]"
)
