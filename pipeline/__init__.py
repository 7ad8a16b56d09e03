"""The pipeline: libraries in rooms -- generation (``generation/``), the integrity audit
(``integrity/``), release storage (``storage/``), reading runs (``evaluation/``) -- and, on
the roof, the commands (Hydra apps named after what they do: ``release``, ``verify``,
``audit``, ...; ``main`` is the ``gridbench`` console script). docs/architecture.md draws
the layers. Import what you need from its room (``from pipeline.generation import TaskKey``)
or from the public face (``import gridbench``)."""
