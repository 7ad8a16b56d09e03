"""The LLM agent: an OpenAI-compatible chat-completions runner, its prompt, tool-call parsing,
and a loopback server that plays a scripted policy for tests and smoke runs."""

from gridbench.agents.llm.prompt import PromptTemplates, load_templates, render
from gridbench.agents.llm.runner import END_REASONS, LLMAgent, LLMSettings, Outcome, make_client
from gridbench.agents.llm.toolcalls import ToolCall, structured_calls, text_calls

__all__ = [
    "END_REASONS",
    "LLMAgent",
    "LLMSettings",
    "Outcome",
    "PromptTemplates",
    "ToolCall",
    "load_templates",
    "make_client",
    "render",
    "structured_calls",
    "text_calls",
]
