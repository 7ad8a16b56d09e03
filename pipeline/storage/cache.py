"""The task cache on disk (``release.cache_root``): a generated task is stored once and reused
by later commands (the release step after a Hydra sweep, a rebuild). A cached task is keyed by
its task key and a fingerprint of the generation settings."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from gridbench_core.errors import UserError
from gridbench_core.task_io import answer_from_dict, task_from_dict
from pipeline.generation.build import CertifiedTask, generate_task
from pipeline.generation.keys import GENERATOR_FORMAT, GenerationSettings, TaskKey, domain_fingerprint
from pipeline.parallel import parallel_imap
from pipeline.storage.safe import ReleaseError, load_json, read_bytes

FORMAT = GENERATOR_FORMAT  # an entry of another format is made again


def settings_fingerprint(settings: GenerationSettings, salt: str = "") -> str:
    """Tasks made with other settings or another salt live in another folder (the salt enters
    only through its hash)."""
    salt_hash = hashlib.sha256(salt.encode()).hexdigest() if salt else ""
    text = json.dumps({"format": FORMAT, "settings": asdict(settings), "salt": salt_hash}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached_path(root: Path, key: TaskKey, fingerprint: str) -> Path:
    """Where the cache under ``root`` keeps ``key``'s task made with settings ``fingerprint``
    from its domain as defined now (:func:`domain_fingerprint`: a domain whose attributes,
    rules or words change draws other tasks, which must not be served the old ones)."""
    return root / fingerprint / f"{key.domain}-{domain_fingerprint(key.domain)}" / f"{key.task_id}.json"


def load_cached(path: Path, key: TaskKey) -> CertifiedTask | None:
    """The task stored at ``path``, or None when it is missing, unreadable, or of another key or format."""
    try:  # read like any file from elsewhere: a FIFO, a link or a bomb is a missing task
        record = load_json(read_bytes(path.parent, path.name), str(path))
    except ReleaseError:
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT or record.get("key") != key.public():
        return None
    try:
        return CertifiedTask(
            key,
            task_from_dict(record["task"]),
            answer_from_dict(record["answer"]),
            record.get("timings", {}),
            tuple(record.get("events", ())),
        )
    except (UserError, KeyError, TypeError, ValueError, AttributeError):  # damaged: made again
        return None


def store_cached(path: Path, made: CertifiedTask, run: str = "") -> None:
    """Write ``made`` to ``path`` atomically (through a temporary file named after ``run``,
    the build writing it, and this process: :func:`remove_temporaries`)."""
    record = {
        "format": FORMAT,
        "key": made.key.public(),
        "task": made.task.to_dict(),
        "answer": made.answer.to_dict(),
        "timings": made.timings,
        "events": list(made.events),
    }
    temporary = path.with_name(f"{path.stem}.tmp-{run}-{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(json.dumps(record))
        temporary.replace(path)
    except (IsADirectoryError, NotADirectoryError, FileExistsError) as error:
        # a folder where the entry goes, or a file where one of its folders goes: the cache's
        # to fix, not the output folder's (the command's generic line named that one)
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise UserError(
            f"the task cache cannot store {path}: {error.strerror} (a folder stands where its file "
            "goes, or a file where a folder goes); delete that path or set release.cache_root to "
            "another folder"
        ) from None
    except OSError:  # a full disk: no half-written task is left behind
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise


def proven_again(made: CertifiedTask, settings: GenerationSettings) -> bool:
    """Whether a task read from the cache still is what a release may ship: its key's, with
    the shape and consistency checks verify makes of a task file (the instruction its rules
    render to, the truth grid its roles', the candidates its roles') and its certificate (and
    its cross-check, when the settings ask for one) proved again. The cache is a folder that
    many processes (every node of a cluster) write: a task edited there (a rule deleted, so
    that its truth is no longer the only completion) shipped as "certified" (hostile round 8).
    Its measures are verify's to re-derive."""
    from pipeline.generation.seal import seal
    from pipeline.storage.verification import consistency, task_shape
    from solvers.results import RETRY_FACTOR, deterministic_settings

    task, answer = made.task, made.answer
    if task.task_id != made.key.task_id or task.domain != made.key.domain:
        return False  # another task's entry, copied here (hostile round 9)
    if answer.certificate is None or not answer.certificate.ok or answer.measures is None:
        return False
    if consistency(task, answer) or task_shape(task, f"tasks/{task.domain}/{task.task_id}.json"):
        return False
    solver = deterministic_settings(settings.time_limit_s * RETRY_FACTOR, settings.solver_workers)
    milp = settings.crosscheck_solver if settings.crosscheck else None
    sealed = seal(task, answer, solver, None, milp)
    return sealed.certificate.ok and (sealed.crosscheck is None or sealed.crosscheck.ok)


def remove_temporaries(root: Path, keys: list[TaskKey], settings: GenerationSettings, run: str) -> None:
    """Remove the temporary files the build ``run`` left in the cache for ``keys``: a worker
    stopped by Ctrl-C or SIGTERM while it wrote an entry (a signal sweep over a release left
    one in about one run in ten). Other builds' files, on this machine or another that shares
    the cache, are named after their own run."""
    for key in keys:
        path = cached_path(root, key, settings_fingerprint(settings, key.salt))
        with contextlib.suppress(OSError):
            for temporary in path.parent.glob(f"{path.stem}.tmp-{run}-*"):
                temporary.unlink(missing_ok=True)


def make_task(
    key: TaskKey, settings: GenerationSettings, root: Path | None, run: str = ""
) -> tuple[CertifiedTask, bool]:
    """The certified task of ``key``: from the cache when present and proven again
    (:func:`proven_again`), else generated (and stored). Returns (task, reused)."""
    fingerprint = settings_fingerprint(settings, key.salt)
    path = cached_path(root, key, fingerprint) if root is not None else None
    if path is not None and path.exists():
        cached = load_cached(path, key)
        if cached is not None and proven_again(cached, settings):
            return cached, True
    made = generate_task(key, settings)
    if path is not None:
        store_cached(path, made, run)
    return made, False


def _work(args: tuple[TaskKey, GenerationSettings, str | None, str]) -> tuple[CertifiedTask, bool]:
    key, settings, root, run = args
    return make_task(key, settings, Path(root) if root else None, run)


def make_tasks(
    keys: list[TaskKey],
    settings: GenerationSettings,
    root: Path | None,
    workers: int,
    label: str,
    meanwhile: Callable[[], object] | None = None,
) -> tuple[list[CertifiedTask], int]:
    """Generate (or reuse) every key, in ``workers`` processes, with a progress bar.
    Returns the tasks in the order of ``keys`` and how many were reused from the store.
    ``meanwhile``: called once every key is handed to the workers, while they generate (what
    this process will need next and can prepare now)."""
    build = secrets.token_hex(6)  # names this build's temporary files in the cache
    jobs = [(key, settings, str(root) if root else None, build) for key in keys]
    run = parallel_imap(_work, jobs, workers, label, primed=True)
    try:
        next(run)
        if meanwhile is not None:
            meanwhile()
        results = list(run)
    except BaseException:
        run.close()  # an error (or Ctrl-C) stops the workers, maybe halfway through an entry
        if root is not None:
            remove_temporaries(root, keys, settings, build)
        raise
    finally:
        run.close()
    return [made for made, _ in results], sum(reused for _, reused in results)
