"""Shared helpers of the Hydra entry points: one-line errors and config conversion."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from omegaconf import DictConfig, OmegaConf

from domains import DomainError
from pipeline.generation.keys import GenerationError
from pipeline.storage.safe import ReleaseError
from solvers.task import TaskFormatError

USER_ERRORS = (GenerationError, DomainError, TaskFormatError, ReleaseError, FileNotFoundError,
               ValueError)  # fmt: skip


def run_cli(body: Callable[[DictConfig], int | None], cfg: DictConfig) -> None:
    """Run ``body``; a user error becomes one line on stderr and exit code 2."""
    try:
        code = body(cfg)
    except USER_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    if code:
        sys.exit(code)


def plain(cfg: DictConfig) -> dict[str, Any]:
    container = OmegaConf.to_container(cfg, resolve=True)
    if not isinstance(container, dict):
        raise ValueError("configuration must be a mapping")
    return {str(k): v for k, v in container.items() if k != "hydra"}
