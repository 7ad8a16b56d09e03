"""``import gridbench.gym`` registers the gymnasium environment ``gridbench/Grid-v0``
(:class:`gridbench.adapters.gym_env.GridEnv`); ``gymnasium.make("gridbench.gym:gridbench/Grid-v0")``
imports and registers in one step."""

from gymnasium.envs.registration import register, registry

ENV_ID = "gridbench/Grid-v0"

if ENV_ID not in registry:
    register(id=ENV_ID, entry_point="gridbench.adapters.gym_env:GridEnv", disable_env_checker=False)

__all__ = ["ENV_ID"]
