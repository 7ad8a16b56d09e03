"""`python -m gridbench.commands.evaluate` (make eval): run one agent or model over a release.

    make eval ARGS="agent=search failure_rates=[0.0,0.1,0.3]"
    make eval ARGS="agent=llm agent.model=M agent.base_url=URL"          # any OpenAI-compatible server
    make eval ARGS="+experiment=paper agent=llm agent.model=M shard=0/4"  # one machine of four

The configuration is checked and turned into an :class:`EvalRequest` here; the run itself is
``gridbench/agents/harness.py``.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from gridbench.agents.harness import EvalRequest, run_evaluation
from gridbench.agents.registry import agent_spec
from gridbench.env import EnvSettings
from gridbench_core.errors import UserError
from pipeline.cli import command
from pipeline.config import AgentConf, register_configs
from pipeline.evaluation.runs import parse_shard
from pipeline.parallel import check_workers
from pipeline.storage.read import read_manifest

register_configs()


def request_from(cfg: DictConfig) -> EvalRequest:
    """The typed request of a configuration; user errors raise ``ValueError`` naming the key."""
    release = Path(str(cfg.release))
    read_manifest(release)
    agent = OmegaConf.to_container(cfg.agent, resolve=True)
    unknown = sorted(set(agent) - {f.name for f in fields(AgentConf)}) if isinstance(agent, dict) else []
    if unknown:
        raise UserError(
            f"agent.{unknown[0]} is not an agent setting (see conf/agent/llm.yaml for them all); "
            "arguments of your own agent go in agent.kwargs={...} with agent._target_"
        )
    # the one conversion of the agent's settings: a typed AgentSpec (LLMSettings for agent=llm);
    # a value left missing (the model of agent=llm) is not given
    given = {str(k): v for k, v in agent.items() if not OmegaConf.is_missing(cfg.agent, str(k))}  # type: ignore[union-attr]
    spec = agent_spec(given)
    env = EnvSettings(**OmegaConf.to_container(cfg.env, resolve=True))  # type: ignore[arg-type]
    try:
        env.validate()
    except UserError as error:
        raise UserError(f"env.{error}") from None
    rates = [float(rate) for rate in cfg.failure_rates]
    if not rates or not all(0.0 <= rate < 1.0 for rate in rates) or len(set(rates)) != len(rates):
        raise UserError(f"failure_rates={rates}: give distinct rates in [0, 1), e.g. [0.0,0.1,0.3]")
    if not 1 <= int(cfg.trials) <= 10_000:
        raise UserError(f"trials={cfg.trials} is out of range: use 1..10000")
    check_workers(cfg.workers, "workers")
    request = EvalRequest(
        release=release,
        spec=spec,
        env=env,
        failure_rates=tuple(float(r) for r in cfg.failure_rates),
        trials=int(cfg.trials),
        domains=tuple(str(d) for d in cfg.domains),
        hidden_slots=tuple(int(h) for h in cfg.hidden_slots),
        decoy_budgets=tuple(int(b) for b in cfg.decoy_budgets),
        shard=parse_shard(str(cfg.shard or "")),
        output_root=Path(str(cfg.output_root)),
        run_name=str(cfg.run_name or ""),
        workers=int(cfg.workers),
        traces=bool(cfg.traces),
        resume=bool(cfg.resume),
    )
    request.folder  # noqa: B018 (checked now: a run name that leaves output_root is refused before any work)
    return request


def evaluate(cfg: DictConfig) -> int:
    """Run the evaluation ``cfg`` describes; the exit code."""
    return run_evaluation(request_from(cfg))


main = command("evaluate")(evaluate)


if __name__ == "__main__":
    main()
