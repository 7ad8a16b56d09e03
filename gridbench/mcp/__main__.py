"""``python -m gridbench.mcp``: serve one episode over MCP."""

import sys

import gridbench

gridbench._one_blas_thread()  # before the server's imports load numpy

from gridbench.mcp.server import main  # noqa: E402

sys.exit(main())
