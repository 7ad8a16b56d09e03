"""``import gridbench.gym`` registers the gymnasium environment ``gridbench/Grid-v0``
(:class:`gridbench.adapters.gym_env.GridEnv`); ``gymnasium.make("gridbench.gym:gridbench/Grid-v0")``
imports and registers in one step."""

from gymnasium.envs.registration import register, registry

ENV_ID = "gridbench/Grid-v0"

if ENV_ID not in registry:
    # The environment passes gymnasium's check_env (tested); the passive checker `make` would
    # add is left off because it breaks for good when the first reset raises (a bad option).
    register(id=ENV_ID, entry_point="gridbench.adapters.gym_env:GridEnv", disable_env_checker=True)

__all__ = ["ENV_ID"]
