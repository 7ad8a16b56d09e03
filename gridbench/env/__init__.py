"""The tool environment: episode state, tools, budgets, failures, schemas and scoring."""

from gridbench.env.episode import Episode
from gridbench.env.scoring import score_episode
from gridbench.env.tools import ArgumentError, Tool, openai_schemas, tools_for
from gridbench_core.budgets import UNLIMITED, EnvSettings

__all__ = [
    "UNLIMITED",
    "ArgumentError",
    "EnvSettings",
    "Episode",
    "Tool",
    "openai_schemas",
    "score_episode",
    "tools_for",
]
