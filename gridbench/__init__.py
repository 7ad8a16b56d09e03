"""gridbench: certified, controllable grid-planning benchmarks for agents."""
