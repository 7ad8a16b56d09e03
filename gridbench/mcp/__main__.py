"""``python -m gridbench.mcp``: serve one episode over MCP."""

import os
import sys

# one OpenBLAS thread: an episode's server multiplies no matrices (gridbench/commands/__init__.py)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from gridbench.mcp.server import main  # noqa: E402

sys.exit(main())
