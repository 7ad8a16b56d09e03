"""Adapters that play gridbench tasks from other harnesses, all over one episode core
(:class:`gridbench.adapters.core.Session`):

- ``gridbench.adapters.inspect_task``: the Inspect AI task ``gridbench/gridbench``;
- ``gridbench.mcp``: an MCP server of one episode (``python -m gridbench.mcp``);
- ``gridbench.gym``: the gymnasium environment ``gridbench/Grid-v0``;
- ``gridbench.adapters.trl``: environments for TRL's ``environment_factory`` (GRPO).

Each needs its framework installed (``pip install 'gridbench[adapters]'``); the core does not.
"""

from gridbench.adapters.core import Session, parse_action, result_text

__all__ = ["Session", "parse_action", "result_text"]
