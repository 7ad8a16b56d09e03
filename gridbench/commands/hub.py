"""`python -m gridbench.commands.hub release=PATH repo_id=ORG/NAME` (make hub): publish a release as a
Hugging Face dataset repository.

The release's files are checked against its manifest first (a release that fails that is not
uploaded). The token is read from the environment variable ``token_env`` (default
``HF_TOKEN``) and handed to `huggingface_hub` only: it is written nowhere. ``dry_run=true``
lists what would be uploaded and touches no network. ``answers=false`` holds the answers
back (for a salted, held-out release).
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from gridbench_core.errors import UserError
from pipeline.cli import command
from pipeline.config import register_configs

register_configs()

REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}\Z")
ANSWER_FILES = ("answers/", "data/answers.parquet")


def require_hub() -> None:
    """One line naming the extra to install when huggingface_hub is missing."""
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        raise UserError("publishing needs huggingface_hub: pip install 'gridbench[hub]'") from None


def check_repo_id(repo_id: str) -> None:
    """Refuse, before anything else (a dry run too), a repository id the Hub would refuse:
    ORG/NAME of ASCII letters, digits, '-', '_' and '.', each part 1-96 characters that start
    with a letter or digit and do not end with '-' or '.', no '--' or '..', not ending in
    '.git' (``huggingface_hub``'s own check runs as well)."""
    require_hub()
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id  # type: ignore[attr-defined]  # not in its __all__

    example = "give the dataset repository as ORG/NAME, e.g. repo_id=me/gridbench"
    if not isinstance(repo_id, str) or not REPO_ID.fullmatch(repo_id):
        raise UserError(f"repo_id={repo_id[:100]!r}: {example}")
    parts = repo_id.split("/")
    if any(part.endswith(("-", ".")) for part in parts) or "--" in repo_id or ".." in repo_id:
        raise UserError(
            f"repo_id={repo_id!r}: a part may not end with '-' or '.', nor hold '--' or '..'; {example}"
        )
    if repo_id.lower().endswith(".git"):
        raise UserError(f"repo_id={repo_id!r}: a repository name may not end in '.git'; {example}")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise UserError(f"repo_id={repo_id!r}: the Hub refuses it ({str(error)[:160]})") from None


def upload_plan(release: Path, answers: bool) -> tuple[dict[str, Any], list[str]]:
    """The release's manifest and the files to upload (the manifest's files and the
    manifest itself; answers left out when ``answers`` is False). Refuses a release whose
    files do not match their digests."""
    from pipeline.storage.read import read_manifest
    from pipeline.storage.verification import VerifyReport, check_files, check_release

    manifest = read_manifest(release)
    report = VerifyReport()
    sound = check_files(release, manifest, report)
    check_release(release, manifest, report, sound)  # tables and metadata too, not the proofs
    if report.file_failures:
        raise UserError(
            f"{release} does not match its manifest ({report.file_failures[0]}); run "
            "`make verify` and rebuild before publishing"
        )
    files = sorted(manifest["files"]) + ["manifest.json"]
    if not answers:
        files = [name for name in files if not name.startswith(ANSWER_FILES)]
    return manifest, files


def card_without_answers(card: str) -> str:
    """The dataset card with the ``answers`` configuration taken out of its YAML header (the
    answers are not uploaded, so the Hub must not offer them), and a line saying so."""
    lines = card.splitlines(keepends=True)
    out, skipping = [], False
    for line in lines:
        if line.startswith("- config_name: "):
            skipping = line.strip() == "- config_name: answers"
        elif skipping and not line.startswith("  "):
            skipping = False
        if not skipping:
            out.append(line)
    text = "".join(out)
    head, sep, body = text.partition("\n---\n")
    note = (
        "\n> The answers of this release are held back: it is published for evaluation, and "
        "`verify` needs the full release to re-prove it.\n"
    )
    return head + sep + note + body if sep else text


def dry_run_lines(release: Path, files: list[str], answers: bool, verbose: bool) -> list[str]:
    """What a dry run prints: every file with ``verbose``, else one line per folder (its
    number of files and bytes) and one per file at the top."""

    def note(name: str) -> str:
        return " (its answers configuration removed)" if name == "README.md" and not answers else ""

    if verbose:
        return [f"  {name}  {(release / name).stat().st_size} bytes{note(name)}" for name in files]
    folders: dict[str, list[int]] = {}
    lines = []
    for name in files:
        if "/" in name:
            top = name.split("/", 1)[0] + "/"
            folders.setdefault(top, []).append((release / name).stat().st_size)
        else:
            lines.append(f"  {name}  {(release / name).stat().st_size} bytes{note(name)}")
    lines += [f"  {top}  {len(sizes)} files, {sum(sizes)} bytes" for top, sizes in sorted(folders.items())]
    return [*sorted(lines), "  (verbose=true lists every file)"]


def run_hub(cfg: DictConfig) -> int:
    """Upload (or, with ``dry_run``, list) a release to the Hub; the exit code."""
    release, repo_id = Path(str(cfg.release)), str(cfg.repo_id or "")
    check_repo_id(repo_id)
    manifest, files = upload_plan(release, bool(cfg.answers))
    total = sum((release / name).stat().st_size for name in files)
    salted = bool((manifest.get("config") or {}).get("release", {}).get("salted"))
    print(
        f"{'dry run: would upload' if cfg.dry_run else 'uploading'} {len(files)} files "
        f"({total / 1e6:.1f} MB) of {release.name} to https://huggingface.co/datasets/{repo_id} "
        f"({'private' if cfg.private else 'public'} repository"
        f"{', answers held back' if not cfg.answers else ''})"
    )
    if salted and cfg.answers:
        print("note: this release is salted (held-out); answers=false keeps its answers off the Hub")
    card = (release / "README.md").read_text() if (release / "README.md").is_file() else ""
    if not cfg.answers and card:
        card = card_without_answers(card)
    if cfg.dry_run:
        print("\n".join(dry_run_lines(release, files, bool(cfg.answers), bool(cfg.get("verbose")))))
        return 0
    if not str(cfg.token_env or "").strip():
        raise UserError(
            "token_env='' names no environment variable; give the one that holds your token, "
            "e.g. token_env=HF_TOKEN"
        )
    token = os.environ.get(str(cfg.token_env), "")
    if not token:
        raise UserError(f"no Hugging Face token: set {cfg.token_env} to a write token (or use dry_run=true)")
    for noisy in ("httpx", "huggingface_hub"):  # their INFO lines would bury the one line we print
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        from huggingface_hub import CommitOperationAdd, HfApi

        api = HfApi(token=token)
        api.create_repo(repo_id, repo_type="dataset", private=bool(cfg.private), exist_ok=True)
        operations = [
            CommitOperationAdd(
                path_in_repo=name,
                path_or_fileobj=card.encode() if name == "README.md" else str(release / name),
            )
            for name in files
        ]
        commit = api.create_commit(
            repo_id=repo_id,
            repo_type="dataset",
            operations=operations,
            commit_message=str(cfg.message or f"{manifest['name']} v{manifest['version']}"),
        )
    except Exception as error:  # network, authentication, permissions: one line, never the token
        text = str(error).replace(token, "***").splitlines()[0][:200] if str(error) else ""
        raise UserError(
            f"upload to {repo_id} failed ({type(error).__name__}: {text}); check the network and "
            f"that {cfg.token_env} holds a write token, or try dry_run=true"
        ) from None
    print(f"published: {getattr(commit, 'commit_url', commit)}")
    return 0


main = command("hub")(run_hub)


if __name__ == "__main__":
    main()
