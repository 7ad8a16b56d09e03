"""``python -m gridbench.mcp``: serve one episode over MCP."""

import sys

from gridbench.mcp.server import main

sys.exit(main())
