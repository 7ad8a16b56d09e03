"""Policies that play the environment: baselines now, the LLM runner next."""

from agents.base import Agent, call
from agents.baselines import AGENTS, make_agent

__all__ = ["AGENTS", "Agent", "call", "make_agent"]
