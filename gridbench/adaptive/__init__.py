"""Difficulty that follows the model: an adaptive source of certified tasks
(:class:`AdaptiveSource`), its ladder of rungs (:class:`Difficulty`) and the controller that
moves it (docs/training.md)."""

from gridbench.adaptive.controller import Controller, ControllerSettings
from gridbench.adaptive.ladder import Difficulty, default_ladder, difficulty_of, ladder, ladder_of
from gridbench.adaptive.source import AdaptiveSource, from_config
from gridbench.adaptive.tasks import AdaptiveTask, regenerate

__all__ = [
    "AdaptiveSource",
    "AdaptiveTask",
    "Controller",
    "ControllerSettings",
    "Difficulty",
    "default_ladder",
    "difficulty_of",
    "from_config",
    "ladder",
    "ladder_of",
    "regenerate",
]
