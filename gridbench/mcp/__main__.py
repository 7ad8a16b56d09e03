"""``python -m gridbench.mcp``: serve one episode over MCP."""

import sys

from gridbench._threads import one_blas_thread

one_blas_thread()  # before the server's imports load numpy

from gridbench.mcp.server import main  # noqa: E402

sys.exit(main())
