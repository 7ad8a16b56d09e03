"""One way to build a command: ``@command(config_name)`` turns a body ``(cfg) -> exit code``
into a Hydra entry point with the same behaviour everywhere:

- the command line is composed once before Hydra runs, so that a misspelt key, an unknown
  option or a value of the wrong type is one ``error: ...`` line and exit code 2, like every
  other user error (:class:`gridbench_core.errors.UserError`, solver time-outs included); a
  plain run is run from that composition (Hydra does not compose it again);
- Ctrl-C prints one line and exits 130; a worker pool is stopped with it;
- anything else is a bug: it keeps its traceback and exits 1.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import functools
import importlib
import itertools
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import hydra
from omegaconf import DictConfig, OmegaConf

from gridbench_core.errors import (
    PIPE_CLOSED,
    SolverTimeout,
    Terminated,
    UserError,
    drop_stdout,
    interrupts_raise,
    owns_process,
    quiet_until_running,
    raise_terminated,
    say_stopped,
    stopped_line,
    terminal_text,
)
from gridbench_core.paths import CONF_DIR as CONF

USER_ERRORS: tuple[type[BaseException], ...] = (UserError, FileNotFoundError, SolverTimeout)

MAX_OVERRIDES = 500  # key=value arguments of one command line (a sweep's values are one)
MAX_SWEEP_JOBS = 100_000  # jobs of one multirun
HINT = "see `gridbench <command> --help` (or conf/) for the keys and their values"


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``message`` as one ``error:`` line on stderr (escape sequences and line breaks
    shown as escapes) and exit with ``code``."""
    print(f"error: {terminal_text(message, 4000)}", file=sys.stderr)
    sys.exit(code)


def flush_stdout() -> None:
    """Write out what the command printed: a reader that has gone ends the command with
    :data:`PIPE_CLOSED`, a full disk (or another writable-fixable error) with its one line."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        drop_stdout()
        sys.exit(PIPE_CLOSED)
    except OSError as error:
        drop_stdout()
        message = os_error_line(error)
        if message is None:
            raise
        fail(message.replace("to write", "to write the standard output", 1))


def _first_line(error: BaseException) -> str:
    cause = error.__cause__ or error
    lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
    head = lines[0] if lines else type(cause).__name__
    where = next((line for line in lines[1:] if line.startswith("full_key:")), "")
    if where and where.split(":", 1)[1].strip() not in head:
        head = f"{head} ({where})"
    raw = str(cause).splitlines()
    options = next((n for n, line in enumerate(raw) if line.startswith("Available options in")), None)
    if options is not None:  # Hydra's missing config: its options, on the same line
        names = list(itertools.takewhile(lambda line: line.startswith("\t"), raw[options + 1 :]))
        head = f"{head}; {raw[options].rstrip(':').lower()}: {', '.join(n.strip() for n in names[:30])}"
    return head


def precheck(
    folder: str,
    name: str,
    argv: list[str],
    composed: Callable[[DictConfig], None] | None = None,
    job: str = "app",
) -> bool:
    """Compose the command line's overrides once, outside Hydra, and resolve every
    interpolation, so that Hydra's own errors and those of an interpolation (which would
    otherwise fail only inside the job) become one line and exit 2. A multirun composes each
    value of each swept key. Hydra's flags are read by Hydra's own parser: the overrides
    beside ``--cfg`` / ``-c``, ``--resolve``, ``-p`` or ``--hydra-help`` are checked and the
    flag's run left to Hydra (:func:`hydra_help_argv`); the flags that find the configuration
    elsewhere are Hydra's whole.

    True when the command line is one plain run whose composition sets no ``hydra.mode``:
    the mode Hydra would compose the configuration once more to read (:func:`_mode_read`,
    from the same overrides, Hydra's keys among them) is then known to be none.

    ``composed``: called with the configuration of such a run (that also stays in the folder
    it starts in: no ``hydra.job.chdir``) once it is composed and resolved, before Hydra runs
    it (what the command can start early: its fork server).

    ``job``: the job name Hydra's entry point gives the run (``hydra.job.name``). Such a run's
    composition is kept for this thread, so that Hydra runs it instead of composing the same
    command line again (:func:`_mode_read`)."""
    _KEPT.run = None  # a composition kept by an earlier pre-check serves no other command line
    from hydra._internal.utils import get_args_parser

    # Hydra's own reading of its flags (``-c job`` is ``--cfg job``, not an override ``job``; a
    # flag it does not know is argparse's usage line and exit 2, as Hydra gives it)
    args = get_args_parser().parse_args(argv)
    elsewhere = (args.config_path, args.config_name, args.config_dir, args.experimental_rerun)
    if args.shell_completion or any(value is not None for value in elsewhere):
        return False  # Hydra's completion, or a configuration found elsewhere: Hydra's to compose
    multirun = bool(args.multirun)
    overrides = list(args.overrides)
    if len(overrides) > MAX_OVERRIDES:
        fail(
            f"{len(overrides)} key=value arguments: at most {MAX_OVERRIDES} on one command line "
            "(a sweep's values go in one argument: key=a,b,c)"
        )
    parsed = [_parsed(override) for override in overrides]
    jobs = _sweep_jobs(overrides, parsed) if multirun else [overrides]
    from hydra import compose, initialize_config_dir

    from pipeline.config import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(CONF / folder), job_name=job, version_base=None):
        from hydra.core.global_hydra import GlobalHydra

        searched = _search_path(GlobalHydra.instance().config_loader())
        _check_additions(parsed, folder, lambda job: compose(config_name=name, overrides=job), overrides)
        for line in jobs:
            cfg = _composed(
                functools.partial(compose, config_name=name, overrides=line, return_hydra_config=True)
            )
            _resolved(cfg)
            if multirun:
                _check_launcher(cfg)
    if any(arg.startswith("-") for arg in argv):
        return False
    try:
        known = cfg.hydra.get("mode") is None
        chdir = bool(cfg.hydra.job.get("chdir"))
    except Exception:  # a mode that does not resolve: Hydra's own reading (it swallows that)
        return False
    if known and not chdir:  # one run, in the folder it started in
        _run_folder(cfg)
        if composed is not None:
            composed(cfg)
        _KEPT.run = (name, list(overrides), job, searched, cfg)
    return known


def hydra_help_argv(argv: list[str]) -> list[str]:
    """``argv`` as Hydra's ``--hydra-help`` can read it: without the job's own overrides. That
    page shows Hydra's configuration alone, which Hydra composes from no configuration at all
    with every override of the line, so a key of the command (``release=...``) failed there
    with a traceback; the pre-check has composed the whole line by then, and the page does not
    depend on the job's keys. Hydra's own overrides (``hydra.*``, ``hydra/...``) stay. Any
    other command line is returned as it is."""
    from hydra._internal.utils import get_args_parser

    args = get_args_parser().parse_args(argv)
    if not args.hydra_help:
        return argv
    left = collections.Counter(
        override
        for override in args.overrides
        if not re.match(r"[~+]*hydra(?:[./@=]|$)", override)  # one of Hydra's own keys or groups
    )
    kept = []
    for arg in argv:
        if left[arg] > 0:
            left[arg] -= 1
            continue
        kept.append(arg)
    return kept


def _unresolvable(error: BaseException) -> NoReturn:
    """An interpolation that cannot be resolved: one line, exit 2."""
    fail(f"{_first_line(error)}; fix the interpolation (a literal $ is written \\${{...}}), {HINT}")


def _run_folder(cfg: DictConfig) -> None:
    """Make the folders Hydra's run makes before the job (``hydra.run.dir``, and its
    ``hydra.output_subdir`` when one is set), as it would make them next: one that cannot be
    made is one line and exit 2 here, not a traceback from inside Hydra."""
    from pathlib import Path

    from omegaconf.errors import OmegaConfBaseException

    try:
        run, subdir = str(cfg.hydra.run.dir), cfg.hydra.output_subdir
    except OmegaConfBaseException as error:  # Hydra's own keys are resolved only here
        _unresolvable(error)
    folders = [("hydra.run.dir", Path(run))]
    if subdir is not None:
        folders.append(("hydra.output_subdir", Path(run) / str(subdir)))
    for key, folder in folders:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except (OSError, ValueError) as error:
            fail(
                f"{key}: the folder {terminal_text(str(folder), 200)} cannot be made "
                f"({terminal_text(str(getattr(error, 'strerror', None) or error), 80)}); give one "
                "that can, or leave the key out"
            )


_KEPT = threading.local()  # ``run``: this thread's pre-checked plain run and its composition


def _search_path(loader: Any) -> list[tuple[str, str]]:
    """Where a configuration loader looks for the configuration files (provider, path)."""
    return [(element.provider, element.path) for element in loader.get_search_path().get_path()]


def _kept_composition(loader: Any, config_name: Any, overrides: Any, run_mode: Any) -> DictConfig | None:
    """The composition :func:`precheck` kept for this thread, when Hydra's entry point asks
    for that very run (the same configuration, command line, job name and search path, with
    the ``hydra.mode=RUN`` Hydra adds to a run whose mode is none): what Hydra would compose,
    with that mode set. Used once; None otherwise."""
    from hydra.core.utils import JobRuntime
    from hydra.types import RunMode
    from omegaconf import open_dict, read_write

    kept = getattr(_KEPT, "run", None)
    _KEPT.run = None
    if kept is None or run_mode != RunMode.RUN:
        return None
    name, plain, job, searched, cfg = kept
    if (
        config_name != name
        or list(overrides) != [*plain, "hydra.mode=RUN"]
        or JobRuntime.instance().get("name") != job
        or _search_path(loader) != searched
    ):
        return None
    with read_write(cfg.hydra), open_dict(cfg.hydra):
        cfg.hydra.mode = RunMode.RUN
        cfg.hydra.overrides.hydra.append("hydra.mode=RUN")
    OmegaConf.set_readonly(cfg.hydra, False)  # as composed (the pre-check's HydraConfig set it)
    return cfg


_MODE = threading.local()  # ``known``: this thread's command has no hydra.mode to read


@contextlib.contextmanager
def _mode_read(known: bool) -> Iterator[None]:
    """Hydra composes a run's configuration twice: once only to read ``hydra.mode`` (``None``
    unless a configuration sets it), once to run it. When :func:`precheck` has composed the
    same command line and found no mode, Hydra is told so instead of composing a third time
    (about 0.1 s of every command); otherwise Hydra reads it as usual. ``Hydra.get_mode`` is
    wrapped once a process and asks this thread's flag, so commands running in other threads
    read their own modes.

    The run itself is then composed once, by the pre-check: Hydra's loader is given the
    composition :func:`precheck` kept for the same command line (:func:`_kept_composition`;
    0.1-0.15 s of CPU a command measured), and composes as usual whatever else it is asked."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.hydra import Hydra

    with _WRAPPING:
        if not getattr(Hydra.get_mode, "_gridbench", False):
            real = Hydra.get_mode

            def get_mode(self: Any, config_name: Any, overrides: Any) -> Any:
                if getattr(_MODE, "known", False):
                    return None
                return real(self, config_name=config_name, overrides=overrides)

            get_mode._gridbench = True  # type: ignore[attr-defined]
            Hydra.get_mode = get_mode  # type: ignore[method-assign]
        if not getattr(ConfigLoaderImpl.load_configuration, "_gridbench", False):
            load = ConfigLoaderImpl.load_configuration

            def load_configuration(
                self: Any, config_name: Any, overrides: Any, run_mode: Any, *args: Any, **kwargs: Any
            ) -> Any:
                kept = _kept_composition(self, config_name, overrides, run_mode)
                if kept is not None:
                    return kept
                return load(self, config_name, overrides, run_mode, *args, **kwargs)

            load_configuration._gridbench = True  # type: ignore[attr-defined]
            ConfigLoaderImpl.load_configuration = load_configuration  # type: ignore[method-assign]
    before = getattr(_MODE, "known", False)
    _MODE.known = known
    try:
        yield
    finally:
        _MODE.known = before
        _KEPT.run = None


_WRAPPING = threading.Lock()


def _parsed(override: str) -> Any:
    """One override, parsed by Hydra's grammar; a grammar error is one line, and one with
    characters outside ASCII (which the grammar takes only quoted) says how to quote it."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    key, _, value = override.partition("=")
    if value != value.strip() and value.strip()[:1] not in ("'", '"'):
        fail(
            f"{terminal_text(key, 80)}=...: the value has spaces around it, which would be dropped "
            f"without a word; write {terminal_text(key, 80)}={terminal_text(value.strip(), 200)} "
            "(or quote them: key=' value ')"
        )
    try:
        return OverridesParser.create().parse_overrides([override])[0]
    except HydraException as error:
        if not override.isascii() and value and value[0] not in "'\"":
            fail(
                f"{key}=...: a value with characters outside ASCII must be quoted: "
                f"{key}='{value}' (in a shell: \"{key}='{value}'\")"
            )
        fail(f"{_first_line(error)}; {HINT}")


# Where `+key=value` may add a key the configuration does not have: a config group
# (`+experiment=paper`) or a custom agent's constructor arguments (`agent.kwargs`).
OPEN_KEYS = ("agent.kwargs",)


def _check_additions(parsed: list[Any], folder: str, compose: Any, overrides: list[str]) -> None:
    """Refuse ``+key`` (and ``++key`` for a key that does not exist) outside the documented
    extension points: a typo such as ``+relase.name=x`` would otherwise be accepted, ignored
    by the command and recorded."""
    base: Any = None
    plain = [o for o, p in zip(overrides, parsed, strict=True) if not (p.is_add() or p.is_force_add())]
    for override, text in zip(parsed, overrides, strict=True):
        if override.is_delete():
            _check_deletion(override, text, folder)
            continue
        if not (override.is_add() or override.is_force_add()):
            continue
        key = str(override.key_or_group)
        if "/" in key or (CONF / folder / key).is_dir():
            continue  # a config group: Hydra says whether it has that option
        if base is None:  # the configuration without the additions
            base = _composed(lambda: compose(plain))
        opened = any(
            (key == open_key or key.startswith(f"{open_key}."))
            and OmegaConf.select(base, open_key.rsplit(".", 1)[0], default=_ABSENT) is not _ABSENT
            for open_key in OPEN_KEYS
        )
        exists = override.is_force_add() and OmegaConf.select(base, key, default=_ABSENT) is not _ABSENT
        if opened or exists:
            continue  # an extension point, or `++` on a key that exists (it sets it)
        fail(
            f"{text.split('=', 1)[0]}: {key} is not a setting of this command; `+` adds only a config "
            "group (e.g. +experiment=paper) or an argument of a custom agent (+agent.kwargs.NAME=...); "
            f"drop the `+` to set an existing key; {HINT}"
        )


_ABSENT = object()


def _check_deletion(override: Any, text: str, folder: str) -> None:
    """Refuse ``~key``: every setting of a command is read by it, so a deleted one fails only
    inside the job (a traceback). A config group (``~hydra/...``) is left to Hydra."""
    key = str(override.key_or_group)
    if "/" in key or (CONF / folder / key).is_dir():
        return
    fail(
        f"{terminal_text(text.split('=', 1)[0], 80)}: deleting a setting is not supported (the command "
        f"reads every one); set it instead ({terminal_text(key, 80)}=VALUE); {HINT}"
    )


def _composed(compose: Callable[[], DictConfig]) -> DictConfig:
    """``compose()``, its errors (Hydra's, OmegaConf's, a damaged YAML file) one line."""
    import yaml
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        return compose()
    except (HydraException, OmegaConfBaseException) as error:
        head = _first_line(error)
        group = re.match(r"Could not override '([\w/.-]+)'\. No match in the defaults list", head)
        if group:  # an optional group set without `+` (experiment=paper for +experiment=paper)
            head = f"{head}; {group[1]} is an optional group: add it with +{group[1]}=OPTION"
        foreign = re.match(
            r"In '([\w/.-]+)': ConfigKeyError raised while composing config: \(full_key: (.+)\)", head
        )
        if foreign:  # a group option written for another command (+experiment=paper on release)
            head = (
                f"{foreign[1]} sets {foreign[2]}, which this command does not have: that option is "
                "for another command"
            )
        fail(f"{head}; {HINT}")
    except yaml.YAMLError as error:
        fail(
            f"a configuration file of {CONF} is damaged ({_first_line(error)}); reinstall gridbench "
            "or restore conf/ from the checkout"
        )
    except KeyError as error:  # Hydra copies hydra.job.env_copy's variables as it composes
        name = error.args[0] if error.args else None
        if not isinstance(name, str) or name in os.environ:
            raise
        fail(
            f"hydra.job.env_copy names the environment variable {terminal_text(name, 80)}, which is "
            "not set; set it or leave it out of hydra.job.env_copy"
        )
    raise AssertionError("unreachable")


def _resolved(cfg: DictConfig) -> None:
    """Resolve every interpolation of the job's configuration (``${path:...}``,
    ``${oc.env:...}``, references, ``${oc.decode:...}``) as Hydra's job will: one that
    cannot be resolved is one line naming it, before any work."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.utils import setup_globals
    from omegaconf import open_dict, read_write
    from omegaconf.errors import OmegaConfBaseException

    setup_globals()
    HydraConfig.instance().set_config(cfg)
    task = cfg.copy()
    with read_write(task), open_dict(task):
        del task["hydra"]
    try:
        OmegaConf.to_container(task, resolve=True)
    except (OmegaConfBaseException, UserError, ValueError, TypeError, RecursionError) as error:
        _unresolvable(error)


def _sweep_jobs(overrides: list[str], parsed: list[Any]) -> list[list[str]]:
    """The jobs a pre-check of a multirun composes: every override at its first value, then
    each other value of each swept key in turn (not every combination); a sweep of more than
    :data:`MAX_SWEEP_JOBS` jobs is refused."""
    values: list[list[str]] = []
    for override, text in zip(parsed, overrides, strict=True):
        if not override.is_sweep_override():
            values.append([text])
            continue
        try:
            swept = list(itertools.islice(override.sweep_string_iterator(), MAX_SWEEP_JOBS + 1))
        except Exception:  # a glob sweep needs the group's options: left to Hydra
            return [[o for o, p in zip(overrides, parsed, strict=True) if not p.is_sweep_override()]]
        values.append([f"{override.get_key_element()}={value}" for value in swept] or [text])
    total = 1
    for options in values:
        total *= len(options)
        if total > MAX_SWEEP_JOBS:
            fail(f"the sweep has more than {MAX_SWEEP_JOBS} jobs; sweep fewer values at a time")
    first = [options[0] for options in values]
    jobs = [first]
    for index, options in enumerate(values):
        jobs += [[*first[:index], option, *first[index + 1 :]] for option in options[1:]]
    return jobs


def _check_launcher(cfg: DictConfig) -> None:
    """A multirun's parallel jobs on this machine (the joblib launcher's ``n_jobs``: -1 for
    one per CPU, or 1..what this machine holds), before Hydra starts any."""
    from pipeline.parallel import check_workers

    launcher = cfg.hydra.get("launcher")
    jobs = launcher.get("n_jobs") if launcher is not None else None
    if jobs is None or jobs == -1:
        return
    if isinstance(jobs, int) and not isinstance(jobs, bool) and jobs < -1:
        fail(f"hydra.launcher.n_jobs={jobs}: use -1 (one job per CPU) or a number of jobs >= 1")
    try:
        check_workers(jobs, "hydra.launcher.n_jobs")
    except UserError as error:
        fail(str(error))


_terminate = raise_terminated  # a second SIGTERM ends the process at once


HELP_FLAGS = ("-h", "--help")


def help_page(folder: str, name: str, argv: list[str], about: str | None, program: str) -> str:
    """A command's ``--help``: what it does (``about``, its module's docstring), how to set a
    key, the configuration groups it composes (each one's options, the chosen one marked) and
    its configuration with ``argv``'s overrides applied. Hydra's own ``--help`` printed a
    generic "powered by Hydra" page listing the groups of every app in the folder (the
    evaluation's agents on ``verify``), and took 1-1.5 s scanning every group's options;
    this composes once (``--hydra-help`` stays Hydra's)."""
    from hydra import compose, initialize_config_dir

    from pipeline.config import register_configs

    register_configs()
    overrides = [arg for arg in argv if not arg.startswith("-")]
    if any(arg in ("-m", "--multirun") for arg in argv):  # a sweep: its first job's configuration
        overrides = _sweep_jobs(overrides, [_parsed(override) for override in overrides])[0]
    root = CONF / folder
    with initialize_config_dir(config_dir=str(root), version_base=None):
        cfg = _composed(
            functools.partial(compose, config_name=name, overrides=overrides, return_hydra_config=True)
        )
    choices = {
        str(group): str(choice)
        for group, choice in cfg.hydra.runtime.choices.items()
        if not str(group).startswith("hydra") and choice is not None
    }
    shown = {str(key): value for key, value in cfg.items_ex(resolve=False) if key != "hydra"}
    text = (about or "").strip()
    lines = [text, ""] if text else []
    lines += [
        f"usage: {program} [key=value ...]",
        "Set any key below with key=value (a.b=value for a nested one; +key=value adds one);",
        "--cfg job prints the configuration a command line gives, --hydra-help Hydra's own flags.",
        "",
    ]
    # the groups it has not chosen that its own file names (evaluate's +experiment=paper)
    own = (root / f"{name}.yaml").read_text() if (root / f"{name}.yaml").is_file() else ""
    optional = [
        group.name
        for group in sorted(root.iterdir())
        if group.is_dir()
        and group.name not in choices
        and any(group.glob("*.yaml"))
        and re.search(rf"\+{re.escape(group.name)}=|apps/{re.escape(group.name)}\b", own)
    ]
    if choices or optional:
        lines.append("== Configuration groups (group=option, * the one chosen; +group=option adds one) ==")
        for group in sorted([*choices, *optional]):
            choice = choices.get(group)
            options = sorted(p.stem for p in (root / group).glob("*.yaml")) or [str(choice)]
            marked = ", ".join(f"{o}*" if o == choice else o for o in options)
            lines.append(f"{group}: {marked}" if choice is not None else f"+{group}: {marked}")
        lines.append("")
    lines += ["== Configuration ==", OmegaConf.to_yaml(OmegaConf.create(shown)).rstrip()]
    return "\n".join(lines)


def command(
    config_name: str, folder: str = "apps", early: Callable[[DictConfig], None] | None = None
) -> Callable[[Callable[[DictConfig], int | None]], Callable[[], None]]:
    """Make ``body`` a command over ``conf/<folder>/<config_name>.yaml``. ``early``: called
    with a plain run's configuration as soon as it is composed, before Hydra runs the body
    (:func:`precheck`), to start what the body will wait for."""

    def decorate(body: Callable[[DictConfig], int | None]) -> Callable[[], None]:
        path = str(CONF / "apps") if folder == "apps" else str(CONF)

        @hydra.main(version_base=None, config_path=path, config_name=config_name)
        def task(cfg: DictConfig) -> None:
            # numpy, which every command's libraries use (imported lazily, gridbench_core.lazy:
            # it ran at its first use, in the body), is loaded while a signal still ends the
            # command at once: a KeyboardInterrupt inside its initialisation left it without
            # ``bincount`` (a traceback where the one line belongs)
            importlib.import_module("numpy")
            interrupts_raise(_terminate)  # composed: from now on the command's own handlers
            run_cli(body, cfg)

        def main() -> None:
            # SIGTERM (timeout, SLURM, docker stop, kill) ends the command as Ctrl-C does: its
            # pool stopped, nothing half-written kept, one line; it exited 143 with Python's
            # "leaked semaphore" warnings and a partial folder left for the next build. Until
            # the configuration is composed, either signal ends the process with that line
            # at once (gridbench_core.errors.quiet_until_running): nothing is written yet
            quiet_until_running()
            if body.__module__ == "__main__":  # python -m gridbench.commands.<module>
                owns_process()
            search = folder if folder == "apps" else ""  # the configuration folder, below conf/
            try:
                if any(arg in HELP_FLAGS for arg in sys.argv[1:]):
                    module = sys.modules.get(body.__module__)
                    spec = getattr(module, "__spec__", None)  # python -m: the module's own name
                    program = (
                        sys.argv[0]
                        if sys.argv[0].startswith("gridbench ")
                        else f"python -m {spec.name if spec else body.__module__}"
                    )
                    page = help_page(
                        search, config_name, sys.argv[1:], getattr(module, "__doc__", None), program
                    )
                    try:
                        print(page)
                    except BrokenPipeError:  # `... --help | head`: the reader has gone
                        drop_stdout()
                        sys.exit(PIPE_CLOSED)
                    flush_stdout()
                    return
                known = precheck(search, config_name, sys.argv[1:], early, job=_job_name(task))
                sys.argv[1:] = hydra_help_argv(sys.argv[1:])  # Hydra's own page: its keys alone
                with _mode_read(known):
                    task()
                flush_stdout()
            except SystemExit as stop:
                if stop.code not in (None, 0):  # its failure is said: what cannot be written is dropped
                    with contextlib.suppress(OSError, ValueError):
                        if sys.stdout is not None:
                            sys.stdout.flush()
                    drop_stdout()
                raise
            except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM (Terminated)
                sys.exit(say_stopped(*stopped_line(isinstance(stop, Terminated))))

        main.__doc__ = body.__doc__
        return main

    return decorate


def _job_name(entry: Callable[..., Any]) -> str:
    """The job name Hydra's entry point ``entry`` gives its runs (``hydra.job.name``), found
    as Hydra finds it."""
    from hydra._internal.utils import detect_calling_file_or_module_from_task_function, detect_task_name

    return detect_task_name(*detect_calling_file_or_module_from_task_function(entry))


def run_cli(body: Callable[[DictConfig], int | None], cfg: DictConfig) -> None:
    """Run ``body``; a user error becomes one line on stderr and exit code 2."""
    from pipeline.parallel import executor_of, use_executor

    try:
        with use_executor(executor_of(cfg)):
            code = body(cfg)
    except USER_ERRORS as error:
        hint = "; raise solver.time_limit_s" if isinstance(error, SolverTimeout) else ""
        fail(f"{error}{hint}")
    except BrokenPipeError:  # the reader of its output stopped early (`| head`)
        drop_stdout()
        sys.exit(PIPE_CLOSED)
    except OSError as error:
        message = os_error_line(error)
        if message is None:
            raise
        fail(message)
    if code:
        sys.exit(code)


NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
NOT_ALLOWED = (errno.EACCES, errno.EPERM, errno.EROFS)
NOT_A_FOLDER = (errno.ENOTDIR, errno.EEXIST, errno.EISDIR)


def os_error_line(error: OSError) -> str | None:
    """The one line of an operating-system error that the user can fix (a full disk, a
    quota, a file-size limit, a folder that may not be written), or None for anything else.
    Writers leave nothing half-written behind them (temporary files and folders are removed,
    a run's row is the commit), so the command can simply be run again."""
    where = f" ({error.filename})" if error.filename else ""
    if error.errno == errno.EFBIG:
        return (
            f"a file would pass this process's file-size limit{where}: {error.strerror}; raise the "
            "limit (ulimit -f) and run the command again: nothing half-written was kept"
        )
    if error.errno in NO_SPACE:
        return (
            f"no space left to write{where}: {error.strerror}; free some space (or raise the "
            "quota) and run the command again: nothing half-written was kept"
        )
    if error.errno in NOT_ALLOWED:
        return f"not allowed to write{where}: {error.strerror}; choose a folder you can write"
    if error.errno in NOT_A_FOLDER:
        return (
            f"cannot write{where}: {error.strerror} (a file stands where a folder is needed, or the "
            "reverse); choose another output folder"
        )
    return None


# Where a command ran, not what it made: left out of what a release records.
WHERE = ("hydra", "executor", "ray")


def plain(cfg: DictConfig) -> dict[str, Any]:
    """``cfg`` resolved into a plain dict, without the ``hydra`` node and the executor
    (a release built on Ray is byte-identical to one built on the local pool)."""
    container = OmegaConf.to_container(cfg, resolve=True)
    if not isinstance(container, dict):
        raise UserError("configuration must be a mapping")
    return {str(k): v for k, v in container.items() if k not in WHERE}
