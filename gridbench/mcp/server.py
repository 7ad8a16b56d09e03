"""An MCP server of gridbench episodes: one episode per MCP session, its tools (the same names
and JSON schemas, with annotations and an ``outputSchema``) answered by :meth:`Session.call`,
the task prompt as the MCP prompt ``task``, the prompt and the score as resources.

    python -m gridbench.mcp release=PATH task=TASK_ID [failure_rate=0.1]          # stdio
    python -m gridbench.mcp release=PATH transport=http port=8765 [task=DEFAULT]   # HTTP

Over stdio the process is the session: one episode. Over streamable HTTP every client session
gets its own episode; a session picks its task with the URL it connects to
(``http://127.0.0.1:8765/mcp?task=TASK_ID&seed=N``), or plays ``task=``. Sessions are the
protocol's own (the ``initialize`` handshake and its ``Mcp-Session-Id``): the server
refuses the ``server/discover`` probe of the sessionless 2026-07-28 protocol, so a client
in ``auto`` mode falls back to the handshake.

The SDK does not check arguments against the tool schemas, so every call with a tool name and
an object of arguments, valid or not, reaches the episode and is answered and counted as
everywhere else; a result with status ``error`` (an invalid call) is an MCP tool error
(``isError``). A request that is not even that is refused by the SDK as a protocol error.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from gridbench.adapters.core import Session, env_settings, result_text, select
from gridbench.env import EnvSettings
from gridbench.env.tools import RESULT_SCHEMA, tools_for
from gridbench_core.errors import UserError, terminal_text

SCORE_URI = "gridbench://score"
PROMPT_URI = "gridbench://prompt"
TASK_URI = "gridbench://task"
PROMPT_NAME = "task"
MAX_EPISODES = 10_000  # episodes kept at most (above max_sessions); the oldest go first

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
    "max_sessions": 1000,  # open sessions of all clients together (the SDK answers 503 beyond)
    "sessions_per_client": 16,  # open sessions of one client address (429 beyond)
    "session_idle": 600,  # seconds without a request after which a session ends
    "grades": "once",  # over HTTP: a task's grade goes to one session (once) or to each (every)
}
INTEGERS = ("max_steps", "seed", "port", "max_sessions", "sessions_per_client", "session_idle")
LIMITS = {"max_sessions": (1, 100_000), "sessions_per_client": (1, 100_000), "session_idle": (1, 86_400)}
USAGE = (
    "usage: python -m gridbench.mcp release=PATH [task=TASK_ID] [failure_rate=F] [query_budget=B] "
    "[check_budget=B] [max_steps=N] [seed=N] [transport=stdio|http] [host=H] [port=P] "
    "[max_sessions=N] [sessions_per_client=N] [session_idle=S] [grades=once|every]"
)
HELP = f"""{USAGE}

Serve gridbench episodes over MCP (Model Context Protocol).
  release=PATH       a release folder (written by `make release`)
  task=TASK_ID       the task to play; required over stdio; over HTTP the default of a session
                     that names none (a session names its own with /mcp?task=TASK_ID&seed=N)
  failure_rate=F     injected tool failures, in [0, 1) (default 0)
  query_budget=B     unlimited | paper | N per hidden cell;  check_budget=B: unlimited | paper | N
  max_steps=N        tool calls per episode (default 200);  seed=N: the episode's seed (default 0)
  transport=stdio    stdio (default; one episode) or http (streamable HTTP, one episode per
                     session) at http://HOST:PORT/mcp (default host 127.0.0.1, port 8765)
  max_sessions=N     over HTTP: open sessions at most (default 1000; 503 beyond), of them
  sessions_per_client=N  from one client address (default 16; 429 beyond); a session ends
  session_idle=S     after S seconds without a request (default 600) or on DELETE
  grades=once        over HTTP: gridbench://score grades a task for the first session that
                     reads it once its episode is over, and no later one (default: a client
                     that may open sessions would otherwise grade throwaway guesses and read
                     the wrong cells); grades=every grades each session (trusted clients only)
Tools: the episode's tools (annotated, with an outputSchema); prompt: task; resources:
gridbench://prompt, gridbench://score, gridbench://task.
A session's id (the Mcp-Session-Id header) is its only credential: whoever holds it plays
that session's episode. Serve on 127.0.0.1 (the default), or behind a proxy that
authenticates its clients; never where strangers can read the ids.
"""


def parse_args(argv: list[str]) -> dict[str, Any]:
    """``key=value`` arguments over :data:`OPTIONS`; a wrong one is a :class:`UserError`."""
    options = dict(OPTIONS)
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep or key not in OPTIONS:
            raise UserError(f"unknown argument {arg[:80]!r}; {USAGE}")
        options[key] = value
    if not options["release"]:
        raise UserError(f"release= is required; {USAGE}")
    options["host"] = str(options["host"]).strip("[]")  # [::1] as ::1
    if options["transport"] not in ("stdio", "http"):
        raise UserError(f"transport={options['transport']!r}: use stdio or http")
    if options["grades"] not in ("once", "every"):
        raise UserError(f"grades={str(options['grades'])[:40]!r}: use once or every")
    if options["transport"] == "stdio" and not options["task"]:
        raise UserError(f"task= is required over stdio (over HTTP a session may name its own); {USAGE}")
    for key in INTEGERS:
        try:
            options[key] = int(options[key])
        except ValueError:
            raise UserError(f"{key}={str(options[key])[:40]!r} must be an integer") from None
    for key, (low, high) in LIMITS.items():
        if not low <= options[key] <= high:
            raise UserError(f"{key}={options[key]}: use {low}..{high}")
    try:
        options["failure_rate"] = float(options["failure_rate"])
    except ValueError:
        raise UserError(f"failure_rate={options['failure_rate']!r} must be a number in [0, 1)") from None
    if not 1 <= options["port"] <= 65535:
        raise UserError(f"port={options['port']}: need a port in 1..65535")
    return options


def server_url(host: str, port: int) -> str:
    """The URL a client connects to (an IPv6 address in brackets: ``http://[::1]:8765/mcp``)."""
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    return f"http://{shown}:{port}/mcp"


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


class Episodes:
    """The episodes of a server: one per MCP session, made on the session's first request
    from the task it names (``?task=`` on its URL) or the server's ``task``."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.release = Path(options["release"])
        self.records = {record.task_id: record for record in select(self.release)}
        self.default = options["task"]
        if self.default is not None:
            self.record(self.default)  # an unknown task stops the server before it starts
        self.settings: EnvSettings = env_settings(
            failure_rate=options["failure_rate"],
            query_budget=options["query_budget"],
            check_budget=options["check_budget"],
            max_steps=options["max_steps"],
        )
        self.seed = options["seed"]
        self.per_session = options["transport"] == "http"  # stdio: the process is the session
        self.sessions: OrderedDict[str, Session] = OrderedDict()
        self.single: Session | None = None
        self.grade_once = self.per_session and options["grades"] == "once"
        self.graded: set[str] = set()  # tasks whose grade went to a session

    def score(self, session: Session) -> dict[str, Any]:
        """What ``gridbench://score`` tells ``session``: what it spent, graded once its episode
        is over -- over HTTP with ``grades=once``, only for the first session of the task to
        read it then (a later one reads ``graded_elsewhere``: new sessions are free to open,
        and a grade for each would let a client play throwaway guesses and read which cells
        were wrong before it plays the task for real)."""
        progress = session.progress()
        if not (self.grade_once and session.over):
            return progress
        if session.task_id not in self.graded:
            self.graded.add(session.task_id)
            session.grade_holder = True  # type: ignore[attr-defined]
        if getattr(session, "grade_holder", False):
            return progress
        withheld = {key: (value if key in Session.SPENT else None) for key, value in progress.items()}
        return withheld | {
            "graded_elsewhere": True,
            "message": f"task {session.task_id} was graded for an earlier session of this server "
            "(grades=once); restart the server, or start it with grades=every for trusted clients",
        }

    def record(self, task_id: str) -> Any:
        """The release record of ``task_id``; a :class:`UserError` listing a few ids if unknown."""
        if task_id not in self.records:
            some = ", ".join(sorted(self.records)[:3])
            raise UserError(
                f"task {task_id[:80]!r} is not among the tasks of {self.release.name} (e.g. {some})"
            )
        return self.records[task_id]

    def of(self, ctx: ServerRequestContext) -> Session:
        """The episode of the request's session (made on its first request)."""
        if not self.per_session:
            if self.single is None:
                record = self.record(self.default)
                self.single = Session(record.task, record.answer, self.settings, seed=self.seed)
            return self.single
        headers = getattr(ctx.request, "headers", None) or {}
        key = headers.get("mcp-session-id")
        if not key:
            raise UserError("this request belongs to no MCP session (no Mcp-Session-Id header)")
        session = self.sessions.get(key)
        if session is None:
            task_id, seed = self._choice(ctx)
            record = self.record(task_id)
            session = Session(record.task, record.answer, self.settings, seed=seed)
            self.sessions[key] = session
            while len(self.sessions) > MAX_EPISODES:
                self.sessions.popitem(last=False)
        return session

    def _choice(self, ctx: ServerRequestContext) -> tuple[str, int]:
        query = getattr(ctx.request, "query_params", None) or {}
        task_id = query.get("task") or self.default
        if not task_id:
            raise UserError(
                "this session names no task: connect to /mcp?task=TASK_ID (or start the server with task=)"
            )
        seed = query.get("seed", self.seed)
        try:
            return str(task_id), int(seed)
        except (TypeError, ValueError):
            raise UserError(f"seed={str(seed)[:20]!r} in the URL must be an integer") from None


def _episode(episodes: Episodes, ctx: ServerRequestContext) -> Session:
    """The session's episode, or an MCP error saying how to pick one."""
    if episodes.per_session and ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
        raise MCPError(
            code=types.INVALID_REQUEST,
            message="this server keeps one episode per session: connect with the initialize handshake "
            "(the MCP client's mode='legacy' or 'auto')",
        )
    try:
        return episodes.of(ctx)
    except UserError as error:
        raise MCPError(code=types.INVALID_PARAMS, message=str(error)) from None


def mcp_tools(domain: str) -> list[types.Tool]:
    """The episode's tools for MCP: name, description, input and output schemas, annotations."""
    out = []
    for tool in tools_for(domain).values():
        schema = tool.openai_schema()["function"]
        out.append(
            types.Tool(
                name=tool.name,
                description=schema["description"],
                input_schema=schema["parameters"],
                output_schema=RESULT_SCHEMA,
                annotations=types.ToolAnnotations.model_validate(tool.annotations()),
            )
        )
    return out


def _resources() -> list[types.Resource]:
    return [
        types.Resource(
            name="score",
            uri=SCORE_URI,
            mime_type="application/json",
            description=(
                "what this session's episode spent; once it is over (done), also success, "
                "fraction_correct and wrong_cells (null before: a grade read mid-episode would "
                "tell the truth); over HTTP a task is graded for one session (grades=once)"
            ),
        ),
        types.Resource(
            name="prompt",
            uri=PROMPT_URI,
            mime_type="text/plain",
            description="this session's task: the system and user prompt of the LLM runner",
        ),
        types.Resource(
            name="task", uri=TASK_URI, mime_type="application/json", description="the task id and domain"
        ),
    ]


def build_server(episodes: Episodes) -> Server[Any]:
    """A low-level MCP server over ``episodes`` (one per session)."""

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=mcp_tools(_episode(episodes, ctx).task.domain))

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        result = _episode(episodes, ctx).call(params.name, params.arguments)
        return types.CallToolResult(
            content=[types.TextContent(text=result_text(result))],
            structured_content=result,
            is_error=result["status"] == "error",
        )

    def prompt_text(session: Session) -> str:
        return "\n\n".join(message["content"] for message in session.messages())

    async def list_prompts(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[types.Prompt(name=PROMPT_NAME, description="the task of this session's episode")]
        )

    async def get_prompt(
        ctx: ServerRequestContext, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != PROMPT_NAME:
            raise MCPError(
                code=types.INVALID_PARAMS, message=f"unknown prompt {params.name[:80]!r}; prompts: task"
            )
        session = _episode(episodes, ctx)
        return types.GetPromptResult(
            description=f"task {session.task_id} ({session.task.domain})",
            messages=[types.PromptMessage(role="user", content=types.TextContent(text=prompt_text(session)))],
        )

    async def list_resources(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=_resources())

    async def read_resource(
        ctx: ServerRequestContext, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri, session = str(params.uri), _episode(episodes, ctx)
        if uri == SCORE_URI:
            text = json.dumps(episodes.score(session), default=str)  # graded once the episode is over
        elif uri == PROMPT_URI:
            text = prompt_text(session)
        elif uri == TASK_URI:
            text = json.dumps({"task_id": session.task_id, "domain": session.task.domain})
        else:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown resource {uri[:80]}")
        mime = "text/plain" if uri == PROMPT_URI else "application/json"
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)]
        )

    server: Server[Any] = Server(
        "gridbench",
        version="1",
        instructions=(
            "Each session plays one gridbench episode: fill the hidden cells of a grid with the tools. "
            "The prompt `task` (or the resource gridbench://prompt) is the task; gridbench://score "
            "says what the episode spent, and scores the grid once the episode is over."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )

    async def discover(ctx: ServerRequestContext, params: types.RequestParams | None) -> types.DiscoverResult:
        # the sessionless 2026-07-28 protocol has no session to hold an episode: refuse its
        # probe, and clients in 'auto' mode fall back to the initialize handshake
        raise MCPError(
            code=types.METHOD_NOT_FOUND,
            message="this server keeps one episode per session: use the initialize handshake",
        )

    if episodes.per_session:
        server.add_request_handler("server/discover", types.RequestParams, discover)
    return server


class SessionLimits:
    """ASGI middleware over the SDK's app: one client address may hold at most
    ``per_client`` open sessions (a request that would open another is answered 429, saying
    why), so that one client cannot fill the server's ``max_sessions`` and lock every other
    client out. A session counts until a DELETE ends it or ``idle`` seconds pass without a
    request to it (when the SDK ends it too); its episode goes with it."""

    def __init__(self, app: Any, episodes: Episodes, per_client: int, idle: float) -> None:
        self.app, self.episodes, self.per_client, self.idle = app, episodes, per_client, idle
        self.owner: dict[str, str] = {}  # session id -> the client address that opened it
        self.seen: dict[str, float] = {}  # session id -> its last request (monotonic seconds)

    def forget(self, session: str) -> None:
        """Stop counting ``session`` and drop its episode."""
        self.owner.pop(session, None)
        self.seen.pop(session, None)
        self.episodes.sessions.pop(session, None)

    def _expire(self, now: float) -> None:
        for session in [s for s, last in self.seen.items() if now - last > self.idle]:
            self.forget(session)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Serve one ASGI call (HTTP requests counted, anything else passed through)."""
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        now = time.monotonic()
        self._expire(now)
        header = dict(scope.get("headers") or []).get(b"mcp-session-id")
        if header is not None:
            session = header.decode("latin-1")
            if session in self.seen:
                self.seen[session] = now
            await self.app(scope, receive, send)
            if scope.get("method") == "DELETE":
                self.forget(session)
            return
        client = str((scope.get("client") or ("unknown",))[0])
        held = sum(1 for owner in self.owner.values() if owner == client)
        if scope.get("method") == "POST" and held >= self.per_client:
            await _too_many(send, held, self.idle)
            return

        async def watch(message: Any) -> None:
            if message.get("type") == "http.response.start" and message.get("status", 500) < 400:
                for key, value in message.get("headers") or []:
                    if key.lower() == b"mcp-session-id":
                        opened = value.decode("latin-1")
                        self.owner[opened], self.seen[opened] = client, time.monotonic()
            await send(message)

        await self.app(scope, receive, watch)


async def _too_many(send: Any, held: int, idle: float) -> None:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": types.INVALID_REQUEST,
                "message": f"this client already holds {held} open sessions, the most one client may: "
                f"end one (an HTTP DELETE with its Mcp-Session-Id) or wait {idle:g} s until an idle "
                "one expires",
            },
        }
    ).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# A client that goes away mid-call is not an error of the server's: its request's read or
# reply fails with one of these, which the SDK and uvicorn would log with a traceback.
def _disconnects() -> tuple[type[BaseException], ...]:
    import anyio
    from starlette.requests import ClientDisconnect

    return (
        ClientDisconnect,
        anyio.BrokenResourceError,
        anyio.ClosedResourceError,
        anyio.EndOfStream,
        ConnectionError,
    )


class _OneLine(logging.Formatter):
    """A log record as one escaped line on stderr: the message and the exception's type and
    first words, never a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            words = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
            text += f" ({type(error).__name__}{': ' + words if words else ''})"
        return terminal_text(f"gridbench MCP server: {record.levelname.lower()}: {text}", 600)


class _DropDisconnects(logging.Filter):
    """Drop the records of clients that went away (their exception, its causes or a group
    holding only such)."""

    def __init__(self) -> None:
        super().__init__()
        self.kinds = _disconnects()

    def _is_disconnect(self, error: BaseException | None, depth: int = 0) -> bool:
        if error is None or depth > 8:
            return False
        if isinstance(error, self.kinds):
            return True
        if isinstance(error, BaseExceptionGroup):
            return all(self._is_disconnect(e, depth + 1) for e in error.exceptions)
        return self._is_disconnect(error.__cause__ or error.__context__, depth + 1)

    def filter(self, record: logging.LogRecord) -> bool:
        """False for a record of a client that went away."""
        return not self._is_disconnect(record.exc_info[1] if record.exc_info else None)


def quiet_logs() -> None:
    """What the SDK, Starlette and uvicorn log goes to stderr as one escaped line per record
    (warnings and errors; no traceback), and nothing for a client that went away."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    handler.addFilter(_DropDisconnects())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "mcp", "starlette"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True


def serve(options: dict[str, Any]) -> None:
    """Serve over stdio (one episode) or streamable HTTP (``http://HOST:PORT/mcp``, one
    episode per session), after one start-up line on stderr."""
    episodes = Episodes(options)
    server = build_server(episodes)
    if options["transport"] == "stdio":
        import anyio
        from mcp.server.stdio import stdio_server

        quiet_logs()
        print(
            f"gridbench MCP server on stdio: task {options['task']} of {episodes.release.name}",
            file=sys.stderr,
            flush=True,
        )

        async def run() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(run)
        return
    import uvicorn

    check_bind(options["host"], options["port"])
    app = server.streamable_http_app(
        host=options["host"],
        max_sessions=options["max_sessions"],
        session_idle_timeout=float(options["session_idle"]),
    )
    limited = SessionLimits(app, episodes, options["sessions_per_client"], float(options["session_idle"]))
    url = server_url(options["host"], options["port"])
    default = f" (default {options['task']})" if options["task"] else ""
    print(
        f"gridbench MCP server at {url}: {len(episodes.records)} tasks of {episodes.release.name}, one "
        f"episode per session; a session picks its task with {url}?task=TASK_ID{default}; Ctrl-C stops",
        file=sys.stderr,
        flush=True,
    )
    quiet_logs()
    uvicorn.run(
        limited,
        host=options["host"],
        port=options["port"],
        log_level="warning",
        log_config=None,
        access_log=False,
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``--help``; one ``error:`` line and exit 2 for a wrong argument or release."""
    args = sys.argv[1:] if argv is None else argv
    if any(arg in ("-h", "--help", "help") for arg in args):
        print(HELP)
        return 0
    try:
        serve(parse_args(args))
    except (UserError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0
