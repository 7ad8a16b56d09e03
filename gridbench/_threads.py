"""What a process of ours sets before numpy is imported (imports nothing but ``os``)."""

import os


def one_blas_thread() -> None:
    """numpy's OpenBLAS starts a thread per further core when numpy is imported, and that
    thread spins about 0.08 s of CPU before it sleeps; nothing here multiplies matrices. Called
    first by the processes we own (a command, an MCP episode's server, the test session), so
    they, their fork servers and the processes they start run one; a value the user set stays.
    ``import gridbench`` alone never sets it: a library leaves its host's environment be."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
