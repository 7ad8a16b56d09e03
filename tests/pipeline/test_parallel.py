"""The local pool: results in order, and a worker that dies is an error, never a hang."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from multiprocessing import get_all_start_methods
from pathlib import Path

import pytest

from pipeline.parallel import ExecutorError, parallel_imap

needs_fork_server = pytest.mark.skipif(
    "forkserver" not in get_all_start_methods(),
    reason="no fork server on this platform",
)


def square(n: int) -> int:
    return n * n


def dies_on_three(n: int) -> int:
    if n == 3:
        os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer would
    return n


def test_results_come_back_in_order_or_all_unordered():
    jobs = list(range(30))
    assert list(parallel_imap(square, jobs, 2, "", show=False)) == [n * n for n in jobs]
    assert sorted(parallel_imap(square, jobs, 2, "", ordered=False, show=False)) == [n * n for n in jobs]


@pytest.mark.parametrize("ordered", [True, False])
def test_a_killed_worker_is_an_error_not_a_hang(ordered):
    with pytest.raises(ExecutorError, match="a worker process died"):
        list(parallel_imap(dies_on_three, list(range(12)), 2, "", ordered=ordered, show=False))


def where_am_i(name: str) -> tuple[str, str | None, bool]:
    import sys

    return os.getcwd(), os.environ.get(name), "/gridbench-test-path" in sys.path


def test_each_pool_sees_the_parent_as_it_is_when_the_pool_starts(tmp_path, monkeypatch):
    """Workers are forked from one long-lived fork server, yet each pool's workers run in the
    parent's current folder, with its environment and sys.path of that moment (a test that
    changes them, or a command run from another folder, is not served by stale workers)."""
    list(parallel_imap(square, [1, 2, 3], 2, "", show=False))  # the server exists already
    for n in range(2):
        folder = tmp_path / f"f{n}"
        folder.mkdir()
        monkeypatch.chdir(folder)
        monkeypatch.setenv("GRIDBENCH_POOL_PROBE", f"v{n}")
        monkeypatch.syspath_prepend("/gridbench-test-path")
        seen = list(parallel_imap(where_am_i, ["GRIDBENCH_POOL_PROBE"] * 4, 2, "", show=False))
        assert set(seen) == {(str(folder), f"v{n}", True)}
    monkeypatch.delenv("GRIDBENCH_POOL_PROBE")
    seen = list(parallel_imap(where_am_i, ["GRIDBENCH_POOL_PROBE"] * 4, 2, "", show=False))
    assert {value for _, value, _ in seen} == {None}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_workers_and_their_fork_server_die_with_a_killed_parent(tmp_path):
    """A command killed outright (SIGKILL, the OOM killer) leaves no worker and no fork server
    behind, even with every worker busy in a long job."""
    import subprocess
    import sys
    import time

    script = tmp_path / "parent.py"
    script.write_text(
        "import os, sys, time\n"
        "from pipeline.parallel import parallel_imap\n"
        "def busy(n):\n"
        f"    open(os.path.join({str(tmp_path)!r}, f'pid-{{os.getpid()}}'), 'w').close()\n"
        "    time.sleep(60)\n"
        "if __name__ == '__main__':\n"
        "    list(parallel_imap(busy, [1, 2, 3, 4], 2, '', show=False))\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], cwd=os.getcwd())
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("pid-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = [int(p.name[4:]) for p in tmp_path.glob("pid-*")]
    assert len(workers) == 2
    servers = {int(open(f"/proc/{pid}/stat").read().split(") ", 1)[1].split()[1]) for pid in workers}
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    left = workers + sorted(servers)
    while any(_alive(pid) for pid in left) and time.monotonic() < deadline:
        time.sleep(0.05)
    survivors = [pid for pid in left if _alive(pid)]
    for pid in survivors:  # a failing run leaves nothing behind either
        os.kill(pid, signal.SIGKILL)
    assert not survivors


@needs_fork_server
def test_warm_starts_the_fork_server_the_first_pool_then_uses_and_one_worker_starts_none():
    """``warm`` starts the fork server at once (its imports overlap the caller's); the first
    pool forks from that very server; one worker starts nothing; it ends with the process."""
    import subprocess
    import sys

    code = (
        "from multiprocessing import forkserver as f\n"
        "from pipeline import parallel as p\n"
        "p.warm(1, 'pipeline.storage.cache')\n"
        "print(f._forkserver._forkserver_pid)\n"
        "p.warm(2, 'pipeline.storage.cache')\n"
        "pid = f._forkserver._forkserver_pid\n"
        "print(pid is not None)\n"
        "print(list(p.parallel_imap(abs, [-1, -2, -3], 2, '', show=False)))\n"
        "print(f._forkserver._forkserver_pid == pid)\n"
    )
    from tests import ROOT

    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:4] == ["None", "True", "[1, 2, 3]", "True"], out.stdout


@needs_fork_server
def test_a_fork_server_no_pool_used_is_ended_without_waiting_out_its_imports(tmp_path):
    """A command starts its fork server early (``warm``), before it checks what it was asked
    (a release that exists already): when it stops before any pool, the server is ended at
    once, not waited for while it imports (here a module that takes 20 s to import; the wait
    would have been the 5 s deadline), and it does not outlive the command."""
    import subprocess
    import sys

    from tests import ROOT

    (tmp_path / "slow_import.py").write_text("import time\ntime.sleep(20)\n")
    code = (
        "import time\n"
        "from multiprocessing import forkserver as f\n"
        "from pipeline import parallel as p\n"
        "p.warm(2, 'slow_import')\n"
        "print(f._forkserver._forkserver_pid, flush=True)\n"
        "time.sleep(0.5)\n"  # the server is importing
    )
    environment = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=4
    )
    assert out.returncode == 0, out.stderr
    assert not _alive(int(out.stdout.split()[0]))


@needs_fork_server
def test_sigterm_during_the_exit_time_stop_of_the_fork_server_prints_nothing():
    """An outside run: SIGTERM arriving while a finished command waited for its fork server at
    exit printed "Exception ignored in atexit callback" and a traceback (the command's SIGTERM
    handler raises, as it does for Ctrl-C). The server is now killed at once, the exit is
    quiet and the server does not outlive the command."""
    import subprocess
    import sys

    from tests import ROOT

    code = (
        "import os, signal, time\n"
        "from multiprocessing import forkserver as f\n"
        "from gridbench_core.errors import Terminated\n"
        "from pipeline import parallel as p\n"
        "def term(signum, frame):\n"
        "    signal.signal(signal.SIGTERM, signal.SIG_DFL)\n"
        "    raise Terminated()\n"
        "signal.signal(signal.SIGTERM, term)\n"
        "print(list(p.parallel_imap(abs, [-1, -2, -3], 2, '', show=False)))\n"
        "print(f._forkserver._forkserver_pid, flush=True)\n"
        "real = os.waitpid\n"
        "def waitpid(*args):\n"  # the exit-time wait for the server: SIGTERM comes now
        "    os.waitpid = real\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(2)\n"
        "    return real(*args)\n"
        "os.waitpid = waitpid\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    lines = out.stdout.split()
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert lines[:3] == ["[1,", "2,", "3]"]
    assert not _alive(int(lines[3]))


@pytest.mark.parametrize("shared", [False, True], ids=["own pool", "shared pool"])
def test_a_pool_stopped_by_ctrl_c_has_no_manager_thread_left_when_the_call_returns(shared, monkeypatch):
    """Ctrl-C or SIGTERM while a pool works: its workers are stopped and its manager thread has
    ended (and closed its wake-up pipe) before the interruption reaches the command. A manager
    still closing that pipe while the interpreter exited raced CPython 3.11's exit hook, which
    writes to every pool's pipe unlocked: "Exception ignored ... Bad file descriptor" and a
    traceback after the command's one line (a signal sweep over a release: 6 runs in 40)."""
    import concurrent.futures.process as futures_process
    import time

    from pipeline.parallel import parallel_imap, shared_pool

    teardown = futures_process._ExecutorManagerThread.join_executor_internals

    def slow_teardown(self):  # the manager's teardown, slowed to widen the race
        time.sleep(0.5)
        teardown(self)

    monkeypatch.setattr(futures_process._ExecutorManagerThread, "join_executor_internals", slow_teardown)
    with shared_pool(2 if shared else 1):
        run = parallel_imap(time.sleep, [30, 30, 30], 2, "", show=False, primed=True)
        assert next(run) is None  # every job handed out; the workers sleep
        time.sleep(0.3)
        managers = [thread for thread in list(futures_process._threads_wakeups) if thread.is_alive()]
        assert managers
        with pytest.raises(KeyboardInterrupt):
            run.throw(KeyboardInterrupt())
        assert not [thread for thread in managers if thread.is_alive()]


def test_a_pool_broken_while_jobs_are_still_being_sent_does_not_hold_the_exit(tmp_path):
    """An outside run: Ctrl-C or SIGTERM during a release's audit (every job handed to the pool
    at once) left the command hanging after its last line. With the workers gone while the
    queue's feeder thread was still writing jobs into their pipe, CPython 3.11's pool joined
    that thread for ever. Here 40 jobs of 1 MB are queued, the workers are killed, and the
    process must still exit (it hung until the 30 s timeout before)."""
    import subprocess
    import sys

    from tests import ROOT

    (tmp_path / "slow_job.py").write_text(
        "import os, time\n"
        "def slow(data):\n"
        "    open(f'started-{os.getpid()}', 'w').close()\n"  # this worker holds a job
        "    time.sleep(60)\n"
    )
    (tmp_path / "broken.py").write_text(
        "import glob, os, signal, time\n"
        "from pipeline.parallel import _new_pool\n"
        "from slow_job import slow\n"
        "if __name__ == '__main__':\n"
        "    pool = _new_pool(2, 'slow_job')\n"
        "    futures = [pool.submit(slow, bytes(1 << 20)) for _ in range(40)]\n"
        # both workers busy: the feeder is blocked writing the next 1 MB job into the pipe
        "    while len(glob.glob('started-*')) < 2:\n"
        "        time.sleep(0.02)\n"
        "    for process in list(pool._processes.values()):\n"
        "        os.kill(process.pid, signal.SIGKILL)\n"
        "    futures[0].exception(timeout=20)\n"  # the pool has seen its workers die
        "    print('end', flush=True)\n"
    )
    environment = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    out = subprocess.run(
        [sys.executable, str(tmp_path / "broken.py")],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["end"]


def test_a_run_stopped_early_stops_its_pool_cleanly(tmp_path):
    """A run left before its end (an error in the loop, Ctrl-C, a generator closed early) stops
    its workers, none of them halfway through sending a result (here 4 MB ones): the pool's
    manager thread would wait for the rest of that message for ever, and the interpreter
    joins it at exit, so the command would hang after its last line."""
    import subprocess
    import sys

    from tests import ROOT

    script = tmp_path / "early.py"
    script.write_text(
        "import os, concurrent.futures.process as cfp\n"
        "from pipeline.parallel import parallel_imap\n"
        "def big(n):\n"
        "    return bytes(4 << 20)\n"
        "if __name__ == '__main__':\n"
        "    for _ in range(5):\n"
        "        before = set(cfp._threads_wakeups)\n"
        "        results = parallel_imap(big, list(range(8)), 2, '', show=False)\n"
        "        next(results)\n"
        "        results.close()\n"
        "        for thread in [t for t in cfp._threads_wakeups if t not in before]:\n"
        "            thread.join(timeout=10)\n"
        "            if thread.is_alive():\n"
        "                print('stuck', flush=True)\n"
        "                os._exit(1)  # it would hang at exit\n"
        "    print('clean', flush=True)\n"
    )
    out = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stdout) == (0, "clean\n"), out.stdout + out.stderr[-2000:]


@needs_fork_server
def test_the_fork_server_imports_the_module_run_with_dash_m_so_workers_import_nothing_again(tmp_path):
    """Each worker runs the ``python -m`` module again as ``__mp_main__`` before its first job;
    the fork server has imported that module (and so what it imports), so a worker's run of it
    imports nothing: the heavy module it imports is loaded by this process and the server only,
    not once more by every worker (``-m gridbench.commands.release``: Hydra, 0.15 s a worker)."""
    import subprocess
    import sys

    log = tmp_path / "imports.log"
    (tmp_path / "probe_heavy.py").write_text(
        f"import os\nwith open({str(log)!r}, 'a') as f:\n    f.write(f'{{os.getpid()}}\\n')\n"
    )
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "__init__.py").write_text("")
    (tmp_path / "probe" / "probe_main.py").write_text(
        "import probe_heavy\n"
        "if __name__ == '__main__':\n"
        "    from pipeline import parallel as p\n"
        "    print(sorted(p.parallel_imap(abs, list(range(-8, 0)), 2, '', show=False)))\n"
    )
    from tests import ROOT

    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    out = subprocess.run(
        [sys.executable, "-m", "probe.probe_main"],  # in a package: runpy's warning case
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(list(range(1, 9)))
    assert "RuntimeWarning" not in out.stderr, out.stderr  # runpy's, once a worker (an outside audit)
    importers = log.read_text().split()
    assert len(importers) == len(set(importers)) == 2, importers  # this process and the fork server


def _touch(path: str) -> str:
    Path(path).write_text("ran")
    return path


@pytest.mark.parametrize("workers", [1, 2])
def test_a_primed_run_yields_none_once_every_job_is_handed_out_then_the_results(tmp_path, workers):
    """verify works while its workers prove: a primed run first yields None without waiting
    for any result (in this process: before any job ran); the jobs then run with no one
    asking (in the workers) and the results follow in order."""
    import time

    paths = [str(tmp_path / f"{n}.txt") for n in range(4)]
    run = parallel_imap(_touch, paths, workers, "", show=False, primed=True)
    assert next(run) is None
    if workers == 1:
        assert not any(Path(p).exists() for p in paths)
    else:
        deadline = time.monotonic() + 60
        while not all(Path(p).exists() for p in paths) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert all(Path(p).exists() for p in paths)  # ran in the workers, no result asked for
    assert list(run) == paths


def test_the_fork_server_and_its_children_stay_quiet_when_their_command_stops():
    """Found by an outside audit: a Ctrl-C in a pool's first second printed the fork server's
    KeyboardInterrupt (it was still importing) or a starting worker's FileNotFoundError (its
    command had removed the semaphores) after the command's one line. The server ignores
    Ctrl-C from its first import on, and a child whose start fails that way exits quietly;
    any other error is still shown."""
    import subprocess
    import sys

    from tests import ROOT

    probe = (
        "import signal, sys\n"
        "import pipeline.forkserver_guard as guard\n"
        "assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN\n"
        "assert sys.excepthook is guard.quiet_when_orphaned\n"
        "where = '/usr/lib/python3/multiprocessing/spawn.py'\n"
        "code = compile('def _main(error):\\n    raise error\\n', where, 'exec')\n"
        "space = {}\n"
        "exec(code, space)\n"
        "for error in (FileNotFoundError(2, 'No such file or directory'), ValueError('a real bug')):\n"
        "    try:\n"
        "        space['_main'](error)\n"
        "    except Exception:\n"
        "        sys.excepthook(*sys.exc_info())\n"
        "try:\n"
        "    raise FileNotFoundError(2, 'elsewhere')\n"
        "except Exception:\n"
        "    sys.excepthook(*sys.exc_info())\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "a real bug" in out.stderr and "elsewhere" in out.stderr  # shown
    assert "No such file or directory" not in out.stderr  # the orphaned start: quiet


def test_jobs_run_in_this_process_import_the_extensions_with_ctrl_c_held(tmp_path):
    """A signal sweep over `gridbench generate` and `gridbench audit` (their jobs run in the
    command's own process with one worker): Ctrl-C or SIGTERM while numpy or OR-Tools was
    initialising left numpy without ``asarray`` or raised "ImportError: initialization
    failed", and the command ended with a traceback. The fork server's extension modules are
    imported first, with the signal held until they are whole (here a module that takes 0.6 s,
    interrupted at 0.2 s)."""
    import subprocess
    import sys

    from tests import ROOT

    (tmp_path / "slow_extension.py").write_text("import time\ntime.sleep(0.6)\nDONE = True\n")
    (tmp_path / "jobs.py").write_text(
        "def job(x):\n    import slow_extension\n    return slow_extension.DONE\n"
    )
    code = (
        "import os, signal, sys, threading\n"
        "from pipeline import parallel as p\n"
        "import jobs\n"
        "p.EXTENSIONS = ('slow_extension',)\n"
        "threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
        "try:\n"
        "    print(list(p.parallel_imap(jobs.job, [1, 2], 1, '', show=False)))\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', 'slow_extension' in sys.modules)\n"
    )
    environment = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "interrupted True\n", out.stdout


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
@pytest.mark.parametrize("stop", ["INT while starting", "TERM twice"])
@needs_fork_server
def test_a_command_that_ends_at_once_leaves_no_fork_server_folder_in_tmpdir(stop):
    """A signal sweep over `gridbench release`: Ctrl-C in its first second (the fork server
    started early, the signal still ending the process at once: 53 runs of 100 at 0.6-0.9 s)
    and every second SIGTERM (killed outright) left a ``pymp-*`` folder with the server's
    ``listener-*`` socket in TMPDIR: multiprocessing removes it only in its exit handler. The
    process now kills its fork server and removes that folder before it ends, with exit code
    130 or 143 (a second SIGTERM was -15)."""
    import subprocess
    import sys
    import time

    from tests import ROOT

    starting = stop == "INT while starting"
    code = (
        "import os, signal, time\n"
        "from multiprocessing import forkserver as f\n"
        "from gridbench_core import errors\n"
        "from pipeline import parallel as p\n"
        + (
            "errors.quiet_until_running()\n"  # composing: a signal ends the command at once
            if starting
            else "errors.interrupts_raise(errors.raise_terminated)\n"  # running
        )
        + "p.warm(2, 'pipeline.storage.cache')\n"
        "print(f._forkserver._forkserver_pid, flush=True)\n"
        "if not os.listdir(os.environ['TMPDIR']):\n"
        "    print('no folder to remove')\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGINT if " + str(starting) + " else signal.SIGTERM)\n"
        "    time.sleep(5)\n"
        "except errors.Terminated:\n"  # the command's cleanup, cut short by a second SIGTERM
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(5)\n"
        "print('ran on', flush=True)\n"
    )
    # a short TMPDIR of its own: the server's socket path must fit AF_UNIX's 108 bytes (a test
    # worker's tmp_path, /tmp/pytest-of-.../popen-gw0/test_..._0, does not)
    folder = Path(tempfile.mkdtemp(prefix="gb-", dir="/tmp" if os.path.isdir("/tmp") else None))
    environment = {**os.environ, "TMPDIR": str(folder)}
    try:
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env=environment,
            capture_output=True,
            text=True,
            timeout=60,
        )
        left = list(folder.iterdir())
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert out.returncode == (130 if starting else 143), (out.returncode, out.stderr)
    server = out.stdout.split("\n")[0]
    assert server.isdigit() and out.stdout == f"{server}\n", out.stdout
    assert left == []
    deadline = time.monotonic() + 10
    while _alive(int(server)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(int(server))


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
@needs_fork_server
def test_ctrl_c_while_a_worker_starts_leaves_no_worker_the_pool_does_not_know(tmp_path):
    """A signal sweep over `gridbench release`: one run in 25 hung after Ctrl-C at 0.76 s,
    its fork server and a worker still alive, nothing printed. Each of a pool's first jobs
    starts a worker and waits for the fork server to answer with its pid; Ctrl-C in that wait
    left a worker the pool never recorded. It took jobs and, at the pool's shutdown, the stop
    sentinel meant for a known worker, so the shutdown waited for that worker for ever (or,
    when it did not, it stayed alive and held the server's pipe: the exit waited 5 s).
    Here the server answers the second start 1 s late and Ctrl-C comes in that second: the
    jobs are all handed out first, then every worker is stopped, and the server has no child
    left (before: a hang, or a worker left and a 5 s stop)."""
    import subprocess
    import sys

    from tests import ROOT

    ready = tmp_path / "server-ready"
    (tmp_path / "slow_second_start.py").write_text(
        "import time\n"
        "from multiprocessing import forkserver\n"
        f"open({str(ready)!r}, 'w').close()\n"  # imported last by the server: its imports are done
        "real, calls = forkserver.write_signed, []\n"
        "def write_signed(fd, n):\n"  # the server sends a new worker's pid
        "    calls.append(n)\n"
        "    if len(calls) == 2:\n"
        "        time.sleep(1.0)\n"
        "    return real(fd, n)\n"
        "forkserver.write_signed = write_signed\n"
    )
    code = (
        "import os, signal, threading, time\n"
        "from multiprocessing import forkserver as f\n"
        "from pipeline import parallel as p\n"
        "p.PRELOAD = (*p.PRELOAD, 'slow_second_start')\n"
        "p.warm(2, 'time')\n"
        f"while not os.path.exists({str(ready)!r}):\n"  # the server's imports are done
        "    time.sleep(0.02)\n"
        "threading.Timer(0.4, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
        "try:\n"
        "    with p.shared_pool(2):\n"
        "        print(list(p.parallel_imap(time.sleep, [0.2] * 8, 2, '', show=False)))\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "server = f._forkserver._forkserver_pid\n"
        "def alive():\n"
        "    children = open(f'/proc/{server}/task/{server}/children').read().split()\n"
        "    return [c for c in children if open(f'/proc/{c}/stat').read().split(') ', 1)[1][0] != 'Z']\n"
        # the stopped workers are gone within moments; one the pool does not know stays
        "deadline = time.monotonic() + 2.0\n"
        "while alive() and time.monotonic() < deadline:\n"
        "    time.sleep(0.02)\n"
        "print('children', len(alive()), flush=True)\n"
        "started = time.monotonic()\n"
        "p._stop_fork_server()\n"  # what the exit does: no worker holds the server's pipe open
        "print('stopped in', round(time.monotonic() - started), flush=True)\n"
    )
    environment = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # its server and workers too
        out, err = process.communicate()
        pytest.fail(f"hung after Ctrl-C: {out!r}")
    assert process.returncode == 0, err
    assert out.split("\n")[:3] == ["interrupted", "children 0", "stopped in 0"], out


@pytest.mark.parametrize("stop", ["TERM twice", "TERM after Ctrl-C's line"])
@needs_fork_server
def test_a_command_that_ends_at_once_leaves_no_semaphore_to_the_resource_tracker(tmp_path, stop):
    """A sweep of two SIGTERMs over `gridbench release` (6 runs of 40), and of SIGINT then
    SIGTERM (4 of 60): a process that ended at once while its pool existed left its queues'
    named semaphores registered, and multiprocessing's resource tracker printed "There appear
    to be 5 leaked semaphore objects to clean up at shutdown" and a warning after the
    command's line. They are released before the process ends: its one line only."""
    import subprocess
    import sys

    from tests import ROOT

    twice = stop == "TERM twice"
    code = (
        "import os, signal, time\n"
        "from gridbench_core import errors\n"
        "from pipeline import parallel as p\n"
        "errors.owns_process()\n"
        "errors.interrupts_raise(errors.raise_terminated)\n"
        "with p.shared_pool(2):\n"
        "    run = p.parallel_imap(time.sleep, [30] * 4, 2, '', show=False, primed=True)\n"
        "    next(run)\n"  # the jobs handed out: the pool and its semaphores exist
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGTERM if " + str(twice) + " else signal.SIGINT)\n"
        "        time.sleep(5)\n"
        "    except KeyboardInterrupt as stopped:\n"  # its cleanup not done yet, or its line said
        "        if not " + str(twice) + ":\n"
        "            errors.say_stopped(errors.INTERRUPTED, 130)\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        time.sleep(5)\n"
        "print('ran on', flush=True)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    line = "terminated (SIGTERM)" if twice else "interrupted (Ctrl-C)"
    assert out.returncode == (143 if twice else 130), (out.returncode, out.stderr)
    assert len(out.stderr.splitlines()) == 1 and out.stderr.startswith(line), out.stderr
    assert out.stdout == ""


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
@needs_fork_server
def test_a_worker_dies_with_its_fork_server_even_while_it_starts(tmp_path):
    """A worker set itself to die with its fork server only in its initializer, after its start
    was unpickled: a server ended before that (the command killed, or ended at once by a
    second signal, while its pool started) left the worker alive, running its job and holding
    the command's stdout and stderr open (a test of two SIGTERMs waited for its 30 s jobs, 1
    run in 6). It is set in the worker at once after the fork. Here each worker's start is
    slowed by 1 s, and the command kills its server and ends in that second: the workers are
    gone right after."""
    import subprocess
    import sys
    import time

    from tests import ROOT

    (tmp_path / "slow_worker_start.py").write_text(
        "import time\n"
        "from multiprocessing import spawn\n"
        "real = spawn._main\n"
        "def _main(*args):\n"  # a worker's start, in the worker
        "    time.sleep(1.0)\n"
        "    return real(*args)\n"
        "spawn._main = _main\n"
    )
    pids = tmp_path / "pids"
    code = (
        "import os, signal, sys, time\n"
        "from multiprocessing import forkserver as f\n"
        "from pipeline import parallel as p\n"
        "p.PRELOAD = (*p.PRELOAD, 'slow_worker_start')\n"
        "p.warm(2, 'time')\n"
        "pool = p._new_pool(2, 'time')\n"  # its workers fork once the server's imports are done
        "futures = [pool.submit(time.sleep, 30) for _ in range(2)]\n"
        "with open(sys.argv[1], 'w') as out:\n"  # forked: the server has answered
        "    out.write(' '.join(map(str, pool._processes)))\n"
        "os.kill(f._forkserver._forkserver_pid, signal.SIGKILL)\n"
        "import shutil, multiprocessing.util as u\n"
        "shutil.rmtree(u.get_temp_dir(), ignore_errors=True)\n"  # (what os._exit skips)
        "os._exit(0)\n"  # the command ends at once: no pool of its own stops the workers
    )
    environment = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(pids)],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=60,
    )
    workers = [int(pid) for pid in pids.read_text().split()]
    deadline = time.monotonic() + 2.5  # they die with the server, long before their 1 s start ends
    while [pid for pid in workers if _alive(pid)] and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in workers if _alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert done.returncode == 0 and len(workers) == 2
    assert left == []


def test_a_long_job_leaves_what_came_before_out_of_the_scans_and_its_garbage_collected():
    """``long_job`` (a training shard, its verification): while it runs, what the process held
    before is frozen (no collection scans it); when it ends, the job's cyclic garbage is
    collected, everything is handed back (nothing stays frozen), and garbage made before the
    job is still collectable afterwards."""
    import gc
    import weakref

    from pipeline.parallel import long_job

    class Node:
        pass

    def cycle() -> weakref.ref:
        node = Node()
        node.me = node  # garbage only a collection frees
        return weakref.ref(node)

    gc.collect()
    before_job = cycle()  # garbage that exists when the job starts
    assert gc.get_freeze_count() == 0
    with long_job():
        assert gc.get_freeze_count() > 0
        gc.collect()
        assert before_job() is not None  # frozen with what came before: not scanned
        in_job = cycle()
        gc.disable()  # only long_job's own collection may free the job's garbage
    try:
        assert in_job() is None
    finally:
        gc.enable()
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert before_job() is None
