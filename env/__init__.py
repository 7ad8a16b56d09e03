"""The tool environment: episode state, tools, budgets, failures, schemas and scoring."""

from env.budgets import UNLIMITED, EnvSettings
from env.episode import Episode
from env.scoring import score
from env.tools import ArgumentError, Tool, openai_schemas, tools_for

__all__ = [
    "UNLIMITED",
    "ArgumentError",
    "EnvSettings",
    "Episode",
    "Tool",
    "openai_schemas",
    "score",
    "tools_for",
]
