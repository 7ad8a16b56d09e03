"""One definition of the LLM agent's settings: the fields of LLMSettings, the values of
conf/agent/llm.yaml, and the command's schema made from both (no default written twice)."""

from __future__ import annotations

import ast
import dataclasses
import math
from pathlib import Path

import pytest
import yaml

from gridbench.agents.registry import agent_spec
from gridbench_core.errors import UserError
from gridbench_core.llm_settings import LLM_YAML, LLMSettings, field_names, yaml_defaults
from tests import ROOT, parse_source

LLM_ONLY = {"api_key_env", "base_url", "max_reply_bytes", "max_reminders", "tool_choice", "episode_timeout"}


def test_llm_settings_have_no_default_of_their_own():
    for item in dataclasses.fields(LLMSettings):
        assert item.default is dataclasses.MISSING, item.name
        assert item.default_factory is dataclasses.MISSING, item.name


def test_the_yaml_names_every_setting_and_nothing_else():
    data = yaml.safe_load((ROOT / "conf" / "agent" / "llm.yaml").read_text())
    assert LLM_YAML == ROOT / "conf" / "agent" / "llm.yaml"
    assert set(data) == {"name", *field_names()}
    local = yaml.safe_load((ROOT / "conf" / "agent" / "llm_local.yaml").read_text())
    assert set(local) - {"defaults"} <= set(field_names())  # overrides of known settings only


def test_the_command_schema_is_made_from_the_class_and_the_yaml():
    from omegaconf import MISSING

    from pipeline.config import AgentConf

    schema = {item.name: item for item in dataclasses.fields(AgentConf)}
    assert list(schema) == ["name", "_target_", "kwargs", *field_names()]
    for name, value in yaml_defaults().items():
        assert schema[name].default == (MISSING if value == "???" else value), name


def _classes_with_llm_defaults(path: Path) -> list[str]:
    """Classes in ``path`` that give three or more LLM-only settings a value of their own."""
    found = []
    for node in ast.walk(parse_source(path.read_text())):
        if isinstance(node, ast.ClassDef):
            named = {
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value
            }
            if len(named & LLM_ONLY) >= 3:
                found.append(f"{path.relative_to(ROOT)}:{node.name}")
    return found


def test_no_second_definition_of_the_llm_defaults():
    """A class repeating the LLM settings with values (the old AgentConf, a defaulted
    LLMSettings) is a second definition: the YAML's values would drift from it."""
    paths = [ROOT / "pipeline" / "config.py", *sorted((ROOT / "gridbench").rglob("*.py"))]
    assert [hit for path in paths for hit in _classes_with_llm_defaults(path)] == []
    text = (ROOT / "pipeline" / "config.py").read_text()
    assert "16 * 1024 * 1024" not in text and "120.0" not in text


def test_library_users_get_the_yaml_defaults():
    settings = LLMSettings.from_yaml_defaults(model="m", temperature=0.2)
    expected = {**yaml_defaults(), "model": "m", "temperature": 0.2}
    assert dataclasses.asdict(settings) == expected
    assert agent_spec({"name": "llm", "model": "m", "temperature": 0.2}).llm == settings
    with pytest.raises(UserError, match="agent.model"):
        LLMSettings.from_yaml_defaults()
    with pytest.raises(UserError, match="agent.colour is not an LLM setting"):
        LLMSettings.from_yaml_defaults(model="m", colour="red")
    with pytest.raises(UserError, match="agent.timeout=inf"):
        agent_spec({"name": "llm", "model": "m", "timeout": math.inf})
    with pytest.raises(UserError, match=r"agent.max_steps=0 is out of range"):
        agent_spec({"name": "llm", "model": "m", "max_steps": 0})


@pytest.mark.parametrize(
    "url",
    [
        "127.0.0.1:8000/v1",
        "file:///etc/passwd",
        "http://",
        "http://a b/v1",
        "ftp://x/v1",
        "http://x:99999/v1",
    ],
)
def test_base_url_must_be_an_http_url_with_a_host(url):
    """Round 8: any text was taken, and failed at the first request of every episode."""
    with pytest.raises(UserError, match=r"agent.base_url=.*(http\(s\)|not a URL)"):
        agent_spec({"name": "llm", "model": "m", "base_url": url})
    for good in ("http://127.0.0.1:8000/v1", "https://api.example.com/v1", "http://[::1]:8765/v1"):
        assert agent_spec({"name": "llm", "model": "m", "base_url": good}).llm.base_url == good


@pytest.mark.parametrize("key", ["model", "stream", "n", "messages", "tools", "stream_options"])
def test_extra_body_may_not_set_what_the_runner_owns(key):
    """Round 8: ``extra_body`` is merged into the request last, so ``{model: other}`` was answered
    by another model under this model's name, ``stream`` or ``n`` broke every reply."""
    with pytest.raises(UserError, match=rf"agent.extra_body.{key} is the runner's own"):
        agent_spec({"name": "llm", "model": "m", "extra_body": {key: 1, "top_k": 5}})
    assert agent_spec({"name": "llm", "model": "m", "extra_body": {"top_k": 5}}).llm.extra_body == {
        "top_k": 5
    }


def test_the_command_line_gives_the_same_typed_settings(tmp_path):
    from omegaconf import OmegaConf

    from tests.helpers_release import compose_config

    cfg = compose_config(
        ["agent=llm_local", "agent.model=org/M:1", "agent.extra_body={a: 1}"], "evaluate", "apps"
    )
    agent = OmegaConf.to_container(cfg.agent, resolve=True)
    assert isinstance(agent, dict)
    spec = agent_spec({str(k): v for k, v in agent.items()})
    assert spec.llm == LLMSettings.from_yaml_defaults(
        model="org/M:1", extra_body={"a": 1}, concurrency=1, timeout=900.0, max_retries=0
    )
    assert spec.model == "org/M:1" and spec.concurrency == 1 and spec.is_async


def test_llm_episode_ids_are_those_of_earlier_versions():
    """The run identity of an LLM run is built from the typed settings as the configuration
    mapping of earlier versions built it: a run folder made before resumes (ids pinned)."""
    from omegaconf import OmegaConf

    from gridbench.agents.harness import episode_id, identity
    from gridbench.env import EnvSettings
    from tests.helpers_release import compose_config

    for overrides, pinned in (
        (["agent=llm", "agent.model=org/M-1:q4", "agent.base_url=http://x/v1/"], "d2b33a624f69ffe1"),
        (
            ["agent=llm_local", "agent.model=m", "agent.extra_body={a: 1}", "agent.temperature=0.5"],
            "9319d75d429fe8d5",
        ),
    ):
        cfg = compose_config(overrides, "evaluate", "apps")
        agent = OmegaConf.to_container(cfg.agent, resolve=True)
        assert isinstance(agent, dict)
        spec = agent_spec({str(k): v for k, v in agent.items()})
        assert episode_id("tasks/toy/x.json", 0.0, 0, identity("rel", spec, EnvSettings())) == pinned


def test_the_settings_module_stands_below_pipeline_and_the_http_client():
    """The schema of every command imports it: on the ground floor (no pipeline, no gridbench),
    no openai, no hydra."""
    tree = parse_source((ROOT / "gridbench_core" / "llm_settings.py").read_text())
    imported = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert not imported & {"pipeline", "gridbench", "openai", "httpx2", "hydra", "omegaconf"}
