"""The roof: the thin Hydra apps (``gridbench release``, ``python -m gridbench.commands.verify``,
...) and ``main``, the ``gridbench`` console script that dispatches to them. They parse, call
the floors below (the libraries of ``pipeline/``, the public face ``gridbench/``) and print;
nothing below imports them (docs/architecture.md)."""

import gridbench

gridbench._one_blas_thread()  # first thing a command imports: before numpy
