"""``python -m gridbench.mcp release=PATH task=TASK_ID``: an MCP server of one episode (see
:mod:`gridbench.mcp.server`)."""
