# ruff: noqa: E501
"""Hostile round 5 (issue 27, item 4): each case runs in a fresh subprocess against this
checkout; held = one line naming the problem, exit 2 for bad input (1 for a release that fails
verify), no traceback, nothing half-written. Results and their reading: bench/hostile_round5.md.

    .venv/bin/python bench/hostile_round5.py [cli] [verify] [api] [gym] [mcp] [show]

Work folder: $GRIDBENCH_HOSTILE_WORK (default /tmp/gridbench-hostile5); the tiny release is
built there on first use (tests/hostile.py's build_tiny)."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = str(ROOT / ".venv/bin/python")
BASE = Path(os.environ.get("GRIDBENCH_HOSTILE_WORK", "/tmp/gridbench-hostile5"))
REL = BASE / "rel" / "tiny-v2.0.0"
WORK = BASE / "h"
if not (REL / "manifest.json").exists():
    subprocess.run(
        [
            PY,
            "-c",
            f"from pathlib import Path; from tests.hostile import build_tiny; build_tiny(Path({str(BASE / 'rel')!r}))",
        ],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        check=True,
        capture_output=True,
    )
ENV = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", POLARS_MAX_THREADS="1")
results = []


def gb(*args, cwd=WORK, timeout=300):
    code = 'import sys; sys.argv[0]="gridbench"; from gridbench.commands.main import run; run()'
    return subprocess.run(
        [PY, "-c", code, *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout
    )


def py(snippet, timeout=300):
    return subprocess.run(
        [PY, "-c", textwrap.dedent(snippet)],
        cwd=WORK,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def record(front, name, proc, expect_codes=(2,), must=None, ok_extra=True):
    err = proc.stderr.strip()
    out = proc.stdout.strip()
    tb = "Traceback" in err or "Traceback" in out
    lines = [line_ for line_ in err.splitlines() if line_.strip()]
    held = (proc.returncode in expect_codes) and not tb and ok_extra
    if must and must not in (err + out):
        held = False
    shown = (lines[-1] if lines else out.splitlines()[-1] if out else "")[:220]
    results.append(
        dict(
            front=front, case=name, held=held, rc=proc.returncode, traceback=tb, nlines=len(lines), msg=shown
        )
    )
    print(
        f"{'HELD' if held else 'FAIL'} [{front}] {name}: rc={proc.returncode} tb={tb} lines={len(lines)} :: {shown}",
        flush=True,
    )


def forged(name, edit):
    from_ = REL
    to = WORK / f"forged-{name}"
    if to.exists():
        shutil.rmtree(to)
    shutil.copytree(from_, to)
    sys.path.insert(0, str(ROOT))
    from tests.helpers_release import redigest

    edit(to)
    redigest(to)
    return to


def first(rel, with_decoys=True):
    for t in sorted((rel / "tasks").rglob("*.json")):
        d = json.loads(t.read_text())
        if (d["decoy_budget"] > 0) == with_decoys:
            return t, rel / "answers" / t.relative_to(rel / "tasks")


def jload(p):
    return json.loads(Path(p).read_text())


def jsave(p, d):
    Path(p).write_text(json.dumps(d, indent=1))


def verify(rel):
    return gb("verify", f"release={rel}", "verify.workers=1")


WORK.mkdir(parents=True, exist_ok=True)
which = sys.argv[1:]


def want(tag):
    return not which or tag in which


# ---------------- CLI: odd Hydra overrides -----------------
if want("cli"):
    for name, args in [
        ("verify workers=0", ["verify", f"release={REL}", "verify.workers=0"]),
        ("verify time_limit nan", ["verify", f"release={REL}", "solver.time_limit_s=nan"]),
        ("verify time_limit 1e400", ["verify", f"release={REL}", "solver.time_limit_s=1e400"]),
        (
            "verify crosscheck_solver=gurobi",
            ["verify", f"release={REL}", "verify.crosscheck=true", "verify.crosscheck_solver=gurobi"],
        ),
        ("verify crosscheck=maybe", ["verify", f"release={REL}", "verify.crosscheck=maybe"]),
        ("verify release= (empty)", ["verify", "release="]),
        ("verify release=/dev/null", ["verify", "release=/dev/null"]),
        ("verify release=manifest file", ["verify", f"release={REL}/manifest.json"]),
        ("verify ~verify (key deleted)", ["verify", f"release={REL}", "~verify"]),
        ("verify verify=null", ["verify", f"release={REL}", "verify=null"]),
        ("verify solver.workers=[1,2]", ["verify", f"release={REL}", "solver.workers=[1,2]"]),
        ("verify fullwidth digits", ["verify", f"release={REL}", "solver.time_limit_s=１０"]),
        ("verify solver.seed={a:1}", ["verify", f"release={REL}", "solver.seed={a:1}"]),
        (
            "generate grid.hidden_slots=[[1]]",
            ["generate", "domain=toy", "grid=5x5", "grid.hidden_slots=[[1]]"],
        ),
        (
            "generate grid.decoy_budgets=[-1]",
            ["generate", "domain=toy", "grid=5x5", "grid.decoy_budgets=[-1]"],
        ),
        ("verify --multirun", ["verify", f"release={REL}", "--multirun", "verify.workers=1,2"]),
        ("report runs_root=/nonexistent", ["report", "runs_root=/nonexistent/runs"]),
        ("show trial=-1", ["show", f"run={WORK}/norun", "task=x", "trial=-1"]),
    ]:
        before = sorted(p.name for p in WORK.iterdir())
        p = gb(*args)
        after = sorted(p.name for p in WORK.iterdir())
        record("cli", name, p, expect_codes=(2,), ok_extra=(before == after))


# ---------------- verify: forged, re-signed releases -----------------
def f_truth_decoy_swap(rel):
    t, a = first(rel)
    A = jload(a)
    role = next(r for r in A["roles"] if r["decoys"])
    d = role["decoys"][0]
    role["decoys"][0] = role["truth"]
    role["truth"] = d
    A["truth"][role["row"]][role["col"]] = d
    jsave(a, A)


def f_decoy_as_filtered(rel):
    t, a = first(rel)
    A = jload(a)
    T = jload(t)
    role = next(r for r in A["roles"] if r["decoys"])
    role["filtered"].append(role["decoys"].pop())
    T["decoy_budget"] -= 1
    sys.path.insert(0, str(ROOT))
    from tests.helpers_release import rerender

    jsave(t, rerender(T))
    jsave(a, A)


def f_unused_item(rel):
    t, a = first(rel)
    T = jload(t)
    extra = dict(T["items"][0])
    extra["id"] = "zz_unused_truth_is_" + T["items"][1]["id"]
    T["items"].append(extra)
    T["items"].sort(key=lambda i: i["id"])
    jsave(t, T)


def f_hint_attribute(rel):
    t, a = first(rel)
    T = jload(t)
    A = jload(a)
    truths = {A["truth"][r][c] for r in range(len(A["truth"])) for c in range(len(A["truth"][0]))}
    for item in T["items"]:
        item["zz_hint"] = "truth" if item["id"] in truths else "decoy"
    jsave(t, T)


def f_extra_task_field(rel):
    t, a = first(rel)
    T = jload(t)
    A = jload(a)
    T["solution"] = A["truth"]
    jsave(t, T)


def f_certificate_lies(rel):
    t, a = first(rel)
    A = jload(a)
    A["certificate"]["ok"] = False
    A["certificate"]["failures"] = ["forged"]
    jsave(a, A)


def f_crosscheck_lies(rel):
    t, a = first(rel)
    A = jload(a)
    if A.get("crosscheck"):
        A["crosscheck"]["ok"] = False
        A["crosscheck"]["unique"] = False
    jsave(a, A)


def f_cert_counts(rel):
    t, a = first(rel)
    A = jload(a)
    A["certificate"]["decoys_checked"] = 999
    jsave(a, A)


def f_cert_solver_version(rel):
    t, a = first(rel)
    A = jload(a)
    A["certificate"]["solver_version"] = "9.99\x1b[31m"
    jsave(a, A)


def f_depth_open_after_short(rel):
    t, a = first(rel)
    A = jload(a)
    A["measures"]["depth"]["open_after"] = A["measures"]["depth"]["open_after"][:2]
    jsave(a, A)


def f_bound_loosened(rel):
    t, a = first(rel)
    T = jload(t)
    r = T["global_constraints"][0]
    r["bound"] += 1 if r["kind"] in ("sum_max", "repeat_max", "count_max") else -1
    sys.path.insert(0, str(ROOT))
    from tests.helpers_release import rerender

    jsave(t, rerender(T))


def f_schema_version_int(rel):
    t, a = first(rel)
    T = jload(t)
    T["schema_version"] = 1
    jsave(t, T)


def f_candidates_per_slot_zero(rel):
    t, a = first(rel)
    T = jload(t)
    T["candidates_per_slot"] = 0
    jsave(t, T)


def f_decoy_budget_string(rel):
    t, a = first(rel)
    T = jload(t)
    T["decoy_budget"] = str(T["decoy_budget"])
    jsave(t, T)


def f_measure_negative_space(rel):
    t, a = first(rel)
    A = jload(a)
    A["measures"]["search_space"] = -1
    jsave(a, A)


def f_roles_reordered(rel):
    t, a = first(rel)
    A = jload(a)
    A["roles"] = list(reversed(A["roles"]))
    jsave(a, A)


def f_role_duplicated(rel):
    t, a = first(rel)
    A = jload(a)
    A["roles"].append(A["roles"][0])
    jsave(a, A)


def f_manifest_version_mismatch(rel):
    m = jload(rel / "manifest.json")
    m["version"] = "9.9.9"
    jsave(rel / "manifest.json", m)


if want("verify"):
    for name, edit in [
        ("truth swapped with a decoy", f_truth_decoy_swap),
        ("a decoy relabelled filtered, budget lowered, re-rendered", f_decoy_as_filtered),
        ("an unused item added to items", f_unused_item),
        ("an attribute that labels truth/decoy added to every item", f_hint_attribute),
        ("the solution as an extra top-level task field", f_extra_task_field),
        ("certificate record says ok=false", f_certificate_lies),
        ("crosscheck record says not unique", f_crosscheck_lies),
        ("certificate decoys_checked=999", f_cert_counts),
        ("certificate solver_version with escape", f_cert_solver_version),
        ("depth open_after truncated", f_depth_open_after_short),
        ("a global bound loosened by 1 and re-rendered", f_bound_loosened),
        ("schema_version as the integer 1", f_schema_version_int),
        ("candidates_per_slot=0", f_candidates_per_slot_zero),
        ("decoy_budget as a string", f_decoy_budget_string),
        ("measures.search_space=-1", f_measure_negative_space),
        ("roles in reverse order", f_roles_reordered),
        ("a role listed twice", f_role_duplicated),
        ("manifest version changed", f_manifest_version_mismatch),
    ]:
        if os.environ.get("CASES") and not any(c in name for c in os.environ["CASES"].split("|")):
            continue
        try:
            rel = forged("".join(ch if ch.isalnum() else "_" for ch in name)[:40], edit)
        except Exception as e:
            print("SETUP-ERR", name, type(e).__name__, e)
            continue
        record("verify", name, verify(rel), expect_codes=(1, 2))

# ---------------- Python API: wrong types -----------------
API = f"""
import sys, json
from pathlib import Path
import gridbench
from gridbench_core.errors import UserError
rel = gridbench.load_release("{REL}")
rec = rel[0]
task = json.loads(json.dumps(rec.task))
def run(f):
    try:
        out = f()
        print("RESULT", repr(out)[:200]); sys.exit(0)
    except UserError as e:
        print("error:", str(e).splitlines()[0][:200], file=sys.stderr); sys.exit(2)
"""
if want("api"):
    for name, body, codes in [
        ("score(task, None)", "run(lambda: gridbench.score(task, None))", (0, 2)),
        (
            "score(task, grid, answer='str')",
            "run(lambda: gridbench.score(task, [[None]*task['cols']]*task['rows'], answer='x'))",
            (2,),
        ),
        ("score(task-with-rows-as-str)", "t=dict(task, rows='5'); run(lambda: gridbench.score(t, []))", (2,)),
        (
            "score(task-with-items-None)",
            "t=dict(task, items=None); run(lambda: gridbench.score(t, []))",
            (2,),
        ),
        (
            "score(task-with-slots-of-ints)",
            "t=dict(task, slots=[1,2]); run(lambda: gridbench.score(t, []))",
            (2,),
        ),
        (
            "score(task-with-slot-row-float)",
            "t=json.loads(json.dumps(task)); t['slots'][0]['row']=0.5; run(lambda: gridbench.score(t, []))",
            (2,),
        ),
        (
            "score(task-with-candidates-str)",
            "t=json.loads(json.dumps(task)); t['slots'][0]['candidates']='abc'; run(lambda: gridbench.score(t, []))",
            (2,),
        ),
        ("load_release(123)", "run(lambda: gridbench.load_release(123))", (2,)),
        ("load_release(None)", "run(lambda: gridbench.load_release(None))", (2,)),
        ("EnvSettings(failure_rate='0.1')", "run(lambda: gridbench.EnvSettings(failure_rate='0.1'))", (2,)),
        ("EnvSettings(max_steps=2.5)", "run(lambda: gridbench.EnvSettings(max_steps=2.5))", (2,)),
        ("record.episode(seed='0')", "run(lambda: rec.episode(seed='0'))", (2,)),
        ("release.filter(domains='course')", "run(lambda: len(rel.filter(domains='course')))", (0, 2)),
        ("release.filter(hidden_slots=['2'])", "run(lambda: len(rel.filter(hidden_slots=['2'])))", (0, 2)),
        ("create_dataset('course', size=2)", "run(lambda: gridbench.create_dataset('course', size=2))", (2,)),
        (
            "create_dataset(['course'], size=2.0)",
            "run(lambda: gridbench.create_dataset(['course'], size=2.0))",
            (2,),
        ),
        (
            "TaskKey seed as str -> generate_task",
            "run(lambda: gridbench.generate_task(gridbench.TaskKey('course', 5, 7, 3, 0, '1')))",
            (2,),
        ),
        ("episode.call(name=None, {})", "e=rec.episode(); run(lambda: e.call(None, {}))", (0,)),
        (
            "episode.call('place_item', args=list)",
            "e=rec.episode(); run(lambda: e.call('set_slot', [1,2]))",
            (0,),
        ),
        (
            "episode.call args with NaN row",
            "e=rec.episode(); run(lambda: e.call('set_slot', {'row': float('nan'), 'col': 0, 'item_id': 'x'}))",
            (0,),
        ),
        ("make_agent('nope')", "run(lambda: gridbench.make_agent('nope'))", (2,)),
        ("agent_spec(123)", "run(lambda: gridbench.agent_spec(123))", (2,)),
    ]:
        record("api", name, py(API + body), expect_codes=codes)

# ---------------- gym misuse -----------------
GYM = """
import sys
import gymnasium
from gridbench_core.errors import UserError
from gridbench.adapters.gym_env import GridEnv
def run(f):
    try:
        out = f(); print("RESULT", repr(out)[:200]); sys.exit(0)
    except UserError as e:
        print("error:", str(e).splitlines()[0][:200], file=sys.stderr); sys.exit(2)
    except gymnasium.error.Error as e:
        print("error:", str(e)[:200], file=sys.stderr); sys.exit(2)
"""
if want("gym"):
    for name, body, codes in [
        ("GridEnv(max_steps=0)", f"run(lambda: GridEnv(release='{REL}', max_steps=0))", (2,)),
        ("GridEnv(reward='dense')", f"run(lambda: GridEnv(release='{REL}', reward='dense'))", (2,)),
        ("GridEnv(domains=['nope'])", f"run(lambda: GridEnv(release='{REL}', domains=['nope']))", (2,)),
        ("reset(seed=-1)", f"e=GridEnv(release='{REL}'); run(lambda: e.reset(seed=-1))", (2,)),
        (
            "reset(options={{'index': True}})",
            f"e=GridEnv(release='{REL}'); run(lambda: e.reset(options={{'index': True}}))",
            (2,),
        ),
        (
            "step(None) after reset",
            f"e=GridEnv(release='{REL}'); e.reset(seed=0); run(lambda: e.step(None)[2:4])",
            (0,),
        ),
        (
            "step(bytes)",
            f"e=GridEnv(release='{REL}'); e.reset(seed=0); run(lambda: e.step(b'\\xff\\xfe')[2:4])",
            (0,),
        ),
        (
            "render before reset",
            f"e=GridEnv(release='{REL}', render_mode='ansi'); run(lambda: e.render())",
            (0,),
        ),
        (
            "close twice then step",
            f"e=GridEnv(release='{REL}'); e.reset(seed=0); e.close(); e.close(); run(lambda: e.step('{{}}')[2:4])",
            (0, 2),
        ),
        ("GridEnv(tasks=[1,2,3])", "run(lambda: GridEnv(tasks=[1,2,3]).reset(seed=0))", (2,)),
    ]:
        record("gym", name, py(GYM + body), expect_codes=codes)

# ---------------- MCP -----------------
if want("mcp"):
    for name, args in [
        ("mcp query_budget=abc", [f"release={REL}", "task=TID", "query_budget=abc"]),
        ("mcp failure_rate=nan", [f"release={REL}", "task=TID", "failure_rate=nan"]),
        ("mcp max_steps=-5", [f"release={REL}", "task=TID", "max_steps=-5"]),
        ("mcp seed=huge", [f"release={REL}", "task=x", "seed=" + "9" * 5000]),
        ("mcp release=file", [f"release={REL}/manifest.json", "task=x"]),
    ]:
        tid0 = sorted(p.stem for p in (REL / "tasks").rglob("*.json"))[0]
        record("mcp", name, gb("mcp", *[a.replace("TID", tid0) for a in args], timeout=60))
    # a stdio session fed malformed tool calls
    tid = sorted(p.stem for p in (REL / "tasks").rglob("*.json"))[0]
    msgs = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "x", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "set_slot", "arguments": {"row": [1], "col": {"a": 1}, "item_id": None}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "\u202enope", "arguments": "notadict"},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "set_slot", "arguments": {"row": 10**400, "col": 0, "item_id": "x"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "resources/read",
            "params": {"uri": "gridbench://score/../../etc/passwd"},
        },
        {
            "jsonrpc": "2.0",
            "id": 6,
            "method": "tools/call",
            "params": {"name": "done", "arguments": {"extra": 1}},
        },
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "set_slot", "arguments": {"row": 0, "col": 0, "item_id": "x"}},
        },
    ]
    text = "\n".join(json.dumps(m) for m in msgs) + "\n{not json\n"
    code = 'import sys; sys.argv[0]="gridbench"; from gridbench.commands.main import run; run()'
    import time as _t

    pr = subprocess.Popen(
        [PY, "-c", code, "mcp", f"release={REL}", f"task={tid}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=WORK,
        env=ENV,
        text=True,
    )
    pr.stdin.write(text)
    pr.stdin.flush()
    _t.sleep(15)
    pr.stdin.close()
    pr.stdin = None
    o, e = pr.communicate(timeout=60)
    p = subprocess.CompletedProcess(pr.args, pr.returncode, o, e)
    replies = [json.loads(line_) for line_ in p.stdout.splitlines() if line_.strip().startswith("{")]
    ids = {r.get("id") for r in replies}
    print(
        "MCP replies", [(r.get("id"), ("error" in r) or r.get("result", {}).get("isError")) for r in replies]
    )
    p2 = subprocess.CompletedProcess(p.args, 2 if {2, 3, 4, 5, 6, 7} <= ids else 1, p.stdout, p.stderr)
    record(
        "mcp",
        "stdio session: malformed tool arguments, bidi name, 10**400 row, path-like URI, call after done, bad JSON line",
        p2,
    )

json.dump(results, open(BASE / f"hostile_results_{'_'.join(which) or 'all'}.json", "w"), indent=1)
print(sum(r["held"] for r in results), "held of", len(results))

# ---------------- show / report on damaged files -----------------
if want("show"):
    import gzip

    base = WORK / "runs" / "tiny-v2.0.0" / "random"

    def fresh(name):
        to = WORK / "dmg" / name / "tiny-v2.0.0" / "random"
        if to.parent.parent.exists():
            shutil.rmtree(to.parent.parent)
        shutil.copytree(base, to)
        return to

    def trans(run):
        return sorted((run / "transcripts").glob("*.gz"))

    def tid_of(run, path):
        eid = path.name.split(".")[0]
        for line in (run / "episodes.jsonl").read_text().splitlines():
            d = json.loads(line)
            if d["episode_id"] == eid:
                return d["task_id"]

    cases = []
    r = fresh("list")
    t = trans(r)[0]
    t.write_bytes(gzip.compress(b"[1,2,3]"))
    cases.append(("show: transcript is a JSON list", ["show", f"run={r}", f"task={tid_of(r, t)}"], (2,)))
    r = fresh("events")
    t = trans(r)[0]
    t.write_bytes(
        gzip.compress(
            json.dumps(
                {"episode_id": t.name.split(".")[0], "task_id": tid_of(r, t), "transcript": "notalist"}
            ).encode()
        )
    )
    cases.append(("show: transcript field is a string", ["show", f"run={r}", f"task={tid_of(r, t)}"], (2,)))
    r = fresh("steps")
    t = trans(r)[0]
    t.write_bytes(
        gzip.compress(
            json.dumps(
                {
                    "episode_id": t.name.split(".")[0],
                    "task_id": tid_of(r, t),
                    "transcript": [1, None, {"tool": 5, "arguments": [], "result": "x\x1b[2J"}],
                }
            ).encode()
        )
    )
    cases.append(
        (
            "show: transcript steps of wrong types with escape",
            ["show", f"run={r}", f"task={tid_of(r, t)}"],
            (0, 2),
        )
    )
    r = fresh("zero")
    (r / "results.parquet").write_bytes(b"")
    cases.append(
        (
            "report: zero-byte results.parquet",
            ["report", f"runs_root={r.parent}", f"output={WORK}/rep-zero"],
            (2,),
        )
    )
    r = fresh("runjson")
    (r / "run.json").write_text("{not json")
    cases.append(
        (
            "report: run.json damaged",
            ["report", f"runs_root={r.parent}", f"output={WORK}/rep-runjson"],
            (0, 2),
        )
    )
    r = fresh("empty")
    import polars as pl

    df = pl.read_parquet(base / "results.parquet")
    df.head(0).write_parquet(r / "results.parquet")
    cases.append(
        (
            "report: results.parquet with zero rows",
            ["report", f"runs_root={r.parent}", f"output={WORK}/rep-empty"],
            (2,),
        )
    )
    r = fresh("nan")
    df.with_columns(pl.lit(float("nan")).alias("fraction_correct")).write_parquet(r / "results.parquet")
    cases.append(
        (
            "report: fraction_correct all NaN",
            ["report", f"runs_root={r.parent}", f"output={WORK}/rep-nan"],
            (2,),
        )
    )
    r = fresh("view")
    df.with_columns(pl.lit(-3).alias("steps")).write_parquet(r / "results.parquet")
    cases.append(("view: negative steps", ["view", f"runs_root={r.parent}", f"output={WORK}/view-neg"], (2,)))
    for name, args, codes in cases:
        p = gb(*args)
        out = WORK / args[-1].split("=", 1)[1] if args[0] != "show" else None
        record("show/report", name, p, expect_codes=codes)
json.dump(results, open(BASE / f"hostile_results_{'_'.join(which) or 'all'}.json", "w"), indent=1)
