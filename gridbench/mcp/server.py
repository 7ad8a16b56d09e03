"""An MCP server of one episode: the episode's tools, with the same names and JSON schemas,
answered by :meth:`Session.call`; the task prompt and the score as resources.

    python -m gridbench.mcp release=PATH task=TASK_ID [failure_rate=0.1] [transport=http port=8765]

One server process plays one episode (over HTTP every client shares it): start one per
episode. The SDK does not check arguments against the tool schemas, so every call with a tool
name and an object of arguments, valid or not, reaches the episode and is answered and counted
as everywhere else; a result with status ``error`` (an invalid call) is an MCP tool error
(``isError``). A request that is not even that (arguments that are not an object, a name that
is not a string, text that is not JSON) is refused by the SDK as a protocol error before it
reaches the episode.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from gridbench.adapters.core import Session, env_settings, result_text, select
from gridbench.errors import UserError

SCORE_URI = "gridbench://score"
PROMPT_URI = "gridbench://prompt"
TASK_URI = "gridbench://task"

OPTIONS: dict[str, Any] = {
    "release": None,
    "task": None,
    "failure_rate": 0.0,
    "query_budget": "unlimited",
    "check_budget": "unlimited",
    "max_steps": 200,
    "seed": 0,
    "transport": "stdio",
    "host": "127.0.0.1",
    "port": 8765,
}
USAGE = (
    "usage: python -m gridbench.mcp release=PATH task=TASK_ID [failure_rate=F] [query_budget=B] "
    "[check_budget=B] [max_steps=N] [seed=N] [transport=stdio|http] [host=H] [port=P]"
)


def parse_args(argv: list[str]) -> dict[str, Any]:
    """``key=value`` arguments over :data:`OPTIONS`; a wrong one is a :class:`UserError`."""
    options = dict(OPTIONS)
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep or key not in OPTIONS:
            raise UserError(f"unknown argument {arg[:80]!r}; {USAGE}")
        options[key] = value
    for key in ("release", "task"):
        if not options[key]:
            raise UserError(f"{key}= is required; {USAGE}")
    for key in ("max_steps", "seed", "port"):
        try:
            options[key] = int(options[key])
        except ValueError:
            raise UserError(f"{key}={options[key]!r} must be an integer") from None
    try:
        options["failure_rate"] = float(options["failure_rate"])
    except ValueError:
        raise UserError(f"failure_rate={options['failure_rate']!r} must be a number in [0, 1)") from None
    if options["transport"] not in ("stdio", "http"):
        raise UserError(f"transport={options['transport']!r}: use stdio or http")
    if not 1 <= options["port"] <= 65535:
        raise UserError(f"port={options['port']}: need a port in 1..65535")
    return options


def check_bind(host: str, port: int) -> None:
    """Fail with one line, before serving, when ``host:port`` cannot be listened on."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        with socket.socket(infos[0][0], socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(infos[0][4])
    except OSError as error:
        raise UserError(
            f"cannot listen on {host}:{port} ({error.strerror or error}); choose another host= or port="
        ) from None


def open_session(options: dict[str, Any]) -> Session:
    """The session of the task ``options['task']`` of ``options['release']``."""
    (record,) = select(Path(options["release"]), task_ids=[options["task"]])
    settings = env_settings(
        failure_rate=options["failure_rate"],
        query_budget=options["query_budget"],
        check_budget=options["check_budget"],
        max_steps=options["max_steps"],
    )
    return Session(record.task, record.answer, settings, seed=options["seed"])


def build_server(session: Session) -> Server[Any]:
    """A low-level MCP server over ``session``."""
    tools = [
        types.Tool(
            name=schema["function"]["name"],
            description=schema["function"]["description"],
            input_schema=schema["function"]["parameters"],
        )
        for schema in session.tools
    ]
    schemas = {tool.name: tool.input_schema for tool in tools}

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        result = session.call(params.name, params.arguments)
        return types.CallToolResult(
            content=[types.TextContent(text=result_text(result))],
            structured_content=result,
            is_error=result["status"] == "error",
        )

    def resource_text(uri: str) -> str:
        if uri == SCORE_URI:
            return json.dumps(session.score(), default=str)
        if uri == PROMPT_URI:
            return "\n\n".join(message["content"] for message in session.messages())
        if uri == TASK_URI:
            return json.dumps({"task_id": session.task_id, "domain": session.task.domain})
        raise MCPError(code=types.INVALID_PARAMS, message=f"unknown resource {uri[:80]}")

    async def list_resources(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    name="score",
                    uri=SCORE_URI,
                    mime_type="application/json",
                    description="success, fraction_correct and wrong_cells of the grid now",
                ),
                types.Resource(
                    name="prompt",
                    uri=PROMPT_URI,
                    mime_type="text/plain",
                    description="the task: the system and user prompt of the LLM runner",
                ),
                types.Resource(
                    name="task",
                    uri=TASK_URI,
                    mime_type="application/json",
                    description="the task id and domain",
                ),
            ]
        )

    async def read_resource(
        ctx: ServerRequestContext, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        text = resource_text(uri)
        mime = "text/plain" if uri == PROMPT_URI else "application/json"
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)]
        )

    return Server(
        "gridbench",
        version="1",
        instructions=session.messages()[0]["content"],
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        get_tool_input_schema=schemas.get,
    )


def serve(options: dict[str, Any]) -> None:
    """Serve the episode over stdio or streamable HTTP (``http://HOST:PORT/mcp``)."""
    server = build_server(open_session(options))
    if options["transport"] == "stdio":
        import anyio
        from mcp.server.stdio import stdio_server

        async def run() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(run)
    else:
        import uvicorn

        check_bind(options["host"], options["port"])
        app = server.streamable_http_app(host=options["host"])
        uvicorn.run(app, host=options["host"], port=options["port"], log_level="warning", access_log=False)


def main(argv: list[str] | None = None) -> int:
    """Entry point: one ``error:`` line and exit 2 for a wrong argument or release."""
    try:
        serve(parse_args(sys.argv[1:] if argv is None else argv))
    except (UserError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0
