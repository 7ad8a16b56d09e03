"""The roof: the thin Hydra apps (``gridbench release``, ``python -m gridbench.commands.verify``,
...) and ``main``, the ``gridbench`` console script that dispatches to them. They parse, call
the floors below (the libraries of ``pipeline/``, the public face ``gridbench/``) and print;
nothing below imports them (docs/architecture.md)."""

import os

# numpy's OpenBLAS starts a thread per further core when numpy is imported, and each spins
# about 0.1 s of CPU before it sleeps; nothing here multiplies matrices, so a command's process,
# its fork server and the processes it starts keep one (first thing a command imports; a
# value the user set stays)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
