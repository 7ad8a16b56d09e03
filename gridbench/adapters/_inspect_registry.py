"""The module Inspect AI loads through the ``inspect_ai`` entry point: importing it registers
the ``gridbench/gridbench`` task."""

from gridbench.adapters.inspect_task import gridbench

__all__ = ["gridbench"]
