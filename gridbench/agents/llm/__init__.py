"""The LLM agent: an OpenAI-compatible chat-completions runner, the agent loop it shares with
the Inspect AI solver, its prompt, tool-call parsing, and a loopback server that plays a
scripted policy for tests and smoke runs."""

from gridbench.agents.llm.loop import END_REASONS, AgentLoop, LoopSettings, Outcome, Reply, parse_reply
from gridbench.agents.llm.prompt import PromptTemplates, load_templates, render
from gridbench.agents.llm.runner import AuthenticationStop, LLMAgent, LLMSettings, make_client
from gridbench.agents.llm.toolcalls import ToolCall, structured_calls, text_calls

__all__ = [
    "END_REASONS",
    "AgentLoop",
    "AuthenticationStop",
    "LLMAgent",
    "LLMSettings",
    "LoopSettings",
    "Outcome",
    "PromptTemplates",
    "Reply",
    "ToolCall",
    "load_templates",
    "make_client",
    "parse_reply",
    "render",
    "structured_calls",
    "text_calls",
]
