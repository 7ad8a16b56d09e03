"""The LLM agent's settings: one class, typed, whose default values live in one place only,
``conf/agent/llm.yaml`` (Hydra composes ``make eval agent=llm`` from it; library users get
the same values from :meth:`LLMSettings.from_yaml_defaults`). The class itself holds no
default: a value that is not in the YAML is not a setting.

On the ground floor, free of the runner's imports (the HTTP client): the command
configuration's schema (``pipeline.config.AgentConf``) is generated from these fields, and the
agent loop's turn limits are read from them by ``gridbench.agents.llm.runner``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cache
from typing import Any

from gridbench_core.errors import UserError
from gridbench_core.paths import CONF_DIR

# The file the Hydra commands compose `agent=llm` from (packaged with an install).
LLM_YAML = CONF_DIR / "agent" / "llm.yaml"
MISSING = "???"  # a YAML value that must be given (the model)
REQUEST_FIELDS = ("temperature", "top_p", "max_tokens", "seed", "tool_choice", "parallel_tool_calls")
# what ``extra_body`` may not set: the server would answer another model, another conversation,
# a stream or several choices, and the runner would record them as this model's episode
RESERVED_BODY = ("model", "messages", "tools", "stream", "stream_options", "n", "functions", "function_call")


@dataclass(frozen=True)
class LLMSettings:
    """What the runner sends and how long it goes on (``conf/agent/llm.yaml`` says what each
    field means, and holds its default)."""

    model: str
    base_url: str | None
    api_key_env: str
    temperature: float | None
    top_p: float | None
    max_tokens: int | None
    seed: int | None
    max_steps: int  # model turns per episode
    timeout: float  # seconds per request, the whole request (retries are new requests)
    episode_timeout: float | None  # seconds per episode (None: no limit)
    max_retries: int  # retries of 429 / 408 / 409 / 5xx / time-outs / lost connections
    tool_choice: str | None
    parallel_tool_calls: bool | None
    extra_body: dict[str, Any] | None  # passed through to the server (None: nothing)
    max_reminders: int  # replies in a row without a tool call before end_reason=no_tool_call
    concurrency: int  # episodes in flight at once
    max_reply_bytes: int
    prompt_dir: str | None  # a folder with system.txt and user.txt (None: the shipped templates)

    @classmethod
    def from_yaml_defaults(cls, **values: Any) -> LLMSettings:
        """The settings of ``conf/agent/llm.yaml`` with ``values`` over them (``model`` at
        least: the YAML leaves it to be given). An unknown name is a :class:`UserError`."""
        unknown = sorted(set(values) - set(field_names()))
        if unknown:
            raise UserError(f"agent.{unknown[0]} is not an LLM setting (see {LLM_YAML.name} for them all)")
        merged = {**yaml_defaults(), **values}
        if merged.get("model") in (None, "", MISSING):
            raise UserError("agent=llm needs agent.model=<model name>")
        extra = merged.get("extra_body")
        merged["extra_body"] = dict(extra) if extra else None
        return cls(**merged)

    def validate(self) -> None:
        """Raise :class:`UserError` naming the first setting out of range."""
        checks = (
            ("timeout", self.timeout, 0.001, 86_400.0),
            ("episode_timeout", self.episode_timeout, 0.001, 30 * 86_400.0),
            ("max_steps", self.max_steps, 1, 1_000_000),
            ("max_retries", self.max_retries, 0, 100),
            ("max_reminders", self.max_reminders, 0, 1_000),
            ("concurrency", self.concurrency, 1, 4_096),
            ("max_reply_bytes", self.max_reply_bytes, 1_024, 1 << 30),
        )
        if self.base_url:
            _check_base_url(self.base_url)
        reserved = sorted(set(self.extra_body or {}) & set(RESERVED_BODY))
        if reserved:
            raise UserError(
                f"agent.extra_body.{reserved[0]} is the runner's own: the model goes in agent.model, "
                "the conversation and the tools are the episode's, and one streamed-off reply is what "
                "the runner reads (drop it from extra_body)"
            )
        for name, value, low, high in checks:
            if value is None and name == "episode_timeout":
                continue
            whole = isinstance(value, int) and not isinstance(value, bool)
            number = whole or isinstance(value, float)
            if not number or (isinstance(low, int) and not whole) or not low <= float(value) <= high:  # type: ignore[arg-type]
                raise UserError(f"agent.{name}={value!r} is out of range: use {low}..{high}")

    def request(self) -> dict[str, Any]:
        """The optional request parameters that are set (with ``extra_body``: every field of
        the request but the model and the conversation)."""
        out: dict[str, Any] = dict(self.extra_body or {})
        for name in REQUEST_FIELDS:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


def _check_base_url(url: Any) -> None:
    """``agent.base_url`` is an http(s) URL with a host: anything else (a bare host, a path,
    ``file:``, a typo) failed only at the first request, once per episode, as a connection
    error of every episode of the run."""
    from urllib.parse import urlsplit

    shown = repr(str(url)[:80])
    fix = "use http(s)://HOST[:PORT]/v1, e.g. agent.base_url=http://127.0.0.1:8000/v1"
    if not isinstance(url, str) or len(url) > 2048 or any(c.isspace() or ord(c) < 32 for c in url):
        raise UserError(f"agent.base_url={shown} is not a URL; {fix}")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a port out of range raises here)
    except ValueError:
        raise UserError(f"agent.base_url={shown} is not a URL; {fix}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"agent.base_url={shown} is not an http(s) URL with a host; {fix}")


def field_names() -> tuple[str, ...]:
    """The names of the LLM settings, in their order."""
    return tuple(f.name for f in fields(LLMSettings))


@cache
def _read_yaml() -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(LLM_YAML.read_text(encoding="utf-8"))
    except OSError as error:
        raise UserError(f"{LLM_YAML}: the LLM agent's settings cannot be read ({error})") from None
    if not isinstance(data, dict):
        raise UserError(f"{LLM_YAML}: not a mapping of settings")
    return data


def yaml_defaults() -> dict[str, Any]:
    """The LLM settings of ``conf/agent/llm.yaml``, by name (``model`` is ``???``: given by
    each run). Every field of :class:`LLMSettings` is there, and nothing else but ``name``."""
    data = dict(_read_yaml())
    names = set(field_names())
    if set(data) - {"name"} != names:
        odd = sorted((set(data) - {"name"}) ^ names)
        raise UserError(f"{LLM_YAML}: its keys are not the LLM settings ({odd[:3]} differ)")
    return {name: data[name] for name in field_names()}
