"""Policies that play the environment: baselines now, the LLM runner next."""

from gridbench.agents.base import Agent, call
from gridbench.agents.baselines import AGENTS, make_agent

__all__ = ["AGENTS", "Agent", "call", "make_agent"]
