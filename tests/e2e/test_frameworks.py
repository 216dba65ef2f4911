"""What real agent frameworks hand their model when they use code-executor, over stdio and HTTP.

Each client below connects the way its documentation says, lists the tools, runs TypeScript and
Python that call `mcp__time__get_current_time` (allowedTools ["mcp__time__*"]), searches, runs code
that throws `new Error('boom')`, and over HTTP tries to connect without the bearer token:

- pydantic-ai: `MCPToolset` driven by a `FunctionModel` whose function scripts the tool calls and
  records what the model receives (`ToolReturnPart` / `RetryPromptPart`, as the provider adapters
  render them) and the tool definitions (`info.function_tools`);
- openai-agents: `MCPServerStdio` / `MCPServerStreamableHttp` under an `Agent` whose `Model` is a
  scripted fake that records the `FunctionTool`s (description, params_json_schema) and the
  `function_call_output` items it is given; once by default and once with
  `convert_schemas_to_strict=True`, where the scripted model sends every property (null where it
  has nothing), as a strict model must;
- fastmcp `Client` (a host hands its model the text blocks, or the `ToolError` message);
- langchain-mcp-adapters `MultiServerMCPClient(...).get_tools()` then `tool.ainvoke(tool_call)`:
  the `ToolMessage` content and the tool as `convert_to_openai_tool` gives it to a model;
- the mcp SDK 2.x `Client`, and the 1.x `ClientSession`.

langchain-mcp-adapters requires mcp<2 (0.3.1 installs beside mcp 2.x but fails at import), so it
runs with the mcp 1.x `ClientSession` in a separate venv (tests/e2e/requirements-mcp1.txt), through
frameworks/mcp1_driver.py; the test finds that venv's python at `$CODE_EXECUTOR_MCP1_PYTHON` or
`<repo>/.venv-mcp1/bin/python`.

Each (client, transport) runs its whole scenario once, the first time a test asks for it; the tests
then assert on the record: what the model sees, not only the wire. The last test prints the bytes
each framework hands its model (and writes them to target/framework-bytes.json).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import re
import secrets
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from frameworks.texts import attempt_without_token, blocks_text, exception_text
from harness import OUR_TOOLS, REPO, E2EEnv, binary, free_port, tail, wait_listening

pytestmark = [pytest.mark.needs_binary, pytest.mark.pyodide]

DRIVER = Path(__file__).resolve().parent / "frameworks" / "mcp1_driver.py"
BYTES_FILE = REPO / "target" / "framework-bytes.json"
RECORDS_FILE = REPO / "target" / "framework-records.json"

# A tool call's answer may wait on a Pyodide worker start: far above the frameworks' defaults
# (openai-agents: 5 s), which the bytes table's timings can be held against.
CALL_TIMEOUT = 90.0

TS_CODE = (
    "const r = await callMCPTool('mcp__time__get_current_time', {timezone: 'UTC'});\n"
    "console.log('ts-printed');\n"
    "return 'zone-' + r.timezone;"
)
PY_CODE = (
    "r = await call_mcp_tool('mcp__time__get_current_time', {'timezone': 'UTC'})\n"
    "print('py-printed')\n"
    "'zone-' + r['timezone']"
)
ERROR_CODE = "throw new Error('boom');"
NULLS_CODE = "console.log('nulls-printed'); return 'nulls-' + 6 * 7;"
ALLOWED = ["mcp__time__*"]

# label -> (tool, arguments as a model that leaves optional fields out sends them)
STEPS: dict[str, tuple[str, dict[str, Any]]] = {
    "ts": ("executeTypescript", {"code": TS_CODE, "allowedTools": ALLOWED}),
    "py": ("executePython", {"code": PY_CODE, "allowedTools": ALLOWED}),
    "search": ("searchTools", {"query": "current time"}),
    "error": ("executeTypescript", {"code": ERROR_CODE}),
}
# openai-agents: what a model sends when it has nothing for the optional fields but null.
NULL_STEPS: dict[str, tuple[str, dict[str, Any]]] = {
    "nulls": ("executeTypescript", {"code": NULLS_CODE, "allowedTools": None, "timeoutMs": None}),
    "search_nulls": ("searchTools", {"query": "current time", "server": None, "limit": None, "detail": None}),
}

FRAMEWORKS = ["pydantic-ai", "openai-agents", "openai-agents-strict", "fastmcp", "langchain", "mcp2", "mcp1"]
TRANSPORTS = ["stdio", "http"]
ALL = [(fw, t) for fw in FRAMEWORKS for t in TRANSPORTS]
OPENAI = [(fw, t) for fw in ("openai-agents", "openai-agents-strict") for t in TRANSPORTS]
# Which Python packages each client needs in the test venv (the mcp 1.x ones live in another venv).
NEEDS = {
    "pydantic-ai": "pydantic_ai",
    "openai-agents": "agents",
    "openai-agents-strict": "agents",
    "fastmcp": "fastmcp",
    "mcp2": "mcp",
}
TOKEN_WORDS = re.compile(r"token|unauthori[sz]ed|authori[sz]ation", re.I)


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def assert_no_nested_json(text: str) -> None:
    """The model must not get JSON inside a JSON string (each quote escaped, the error buried):
    if `text` is JSON, no string value in it may itself parse as a JSON object or array; and the
    tell-tale escaped sequences must not appear anywhere."""
    assert isinstance(text, str), repr(text)
    for tell in ('"{\\"', '\\"error\\"', '"[{\\"'):
        assert tell not in text, f"JSON nested in a JSON string ({tell!r}) in what the model gets:\n{text[:1500]}"
    try:
        parsed = json.loads(text)
    except ValueError:
        return

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{path}.{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")
        elif isinstance(value, str) and value.strip()[:1] in ("{", "["):
            try:
                inner = json.loads(value)
            except ValueError:
                return
            assert not isinstance(inner, (dict, list)), (
                f"the string at {path} is itself JSON ({type(inner).__name__}): the model gets it "
                f"double-encoded:\n{text[:1500]}"
            )

    walk(parsed, "$")


def allows_null(schema: dict[str, Any]) -> bool:
    t = schema.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    if "enum" in schema and None in schema["enum"]:
        return True
    return any(allows_null(s) for key in ("anyOf", "oneOf") for s in schema.get(key, []) if isinstance(s, dict))


def strict_args(args: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The arguments a strict-mode model sends: every property the schema requires (strict mode
    requires them all), null for those it has nothing for."""
    return {name: args.get(name) for name in schema.get("required", [])} | args


def need_module(fw: str) -> None:
    mod = NEEDS.get(fw)
    if mod is None:
        return
    try:
        importlib.import_module(mod)
    except ImportError as e:
        msg = (
            f"{fw}: cannot import {mod} ({e}); install tests/e2e/requirements-frameworks.txt into the "
            "test venv"
        )
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip("!!! NOT TESTED: " + msg)


def mcp1_python() -> str:
    env = os.environ.get("CODE_EXECUTOR_MCP1_PYTHON")
    path = Path(env) if env else REPO / ".venv-mcp1" / "bin" / "python"
    if not path.exists():
        msg = (
            f"no mcp 1.x venv at {path} (set CODE_EXECUTOR_MCP1_PYTHON, or: python3 -m venv .venv-mcp1 && "
            ".venv-mcp1/bin/pip install -r tests/e2e/requirements-mcp1.txt): mcp 1.x and "
            "langchain-mcp-adapters are not tested"
        )
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip("!!! NOT TESTED: " + msg)
    return str(path)


# --------------------------------------------------------------------------------------------
# Servers: one world for the stdio servers the clients start, one HTTP server with a token
# --------------------------------------------------------------------------------------------


@dataclass
class Conn:
    transport: str
    e2e: E2EEnv
    log: Path
    url: str | None = None
    token: str | None = None
    http_log: Path | None = None

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    @property
    def command(self) -> str:
        return str(binary())

    @property
    def args(self) -> list[str]:
        return ["serve"]

    @property
    def env(self) -> dict[str, str]:
        return self.e2e.env()

    @property
    def cwd(self) -> str:
        return str(self.e2e.project)

    def server_log(self) -> str:
        return tail(self.http_log if self.transport == "http" else self.log, 4000)


@pytest.fixture(scope="module")
def conns(tmp_path_factory: pytest.TempPathFactory, ce_binary: Path):
    root = tmp_path_factory.mktemp("frameworks-stdio")
    stdio = Conn("stdio", E2EEnv(root, servers=("time",)), root / "stdio-servers.log")
    hroot = tmp_path_factory.mktemp("frameworks-http")
    token = secrets.token_hex(32)
    (hroot / "token").write_text(token + "\n")
    e2e = E2EEnv(hroot, servers=("time",), extra_env={"CODE_EXECUTOR_HTTP_TOKEN_FILE": str(hroot / "token")})
    port = free_port()
    log_path = hroot / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [str(binary()), "serve", "--http", f"127.0.0.1:{port}"],
            cwd=e2e.project,
            env=e2e.env(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_listening(proc, port, log_path)
            http = Conn(
                "http", e2e, hroot / "clients.log", url=f"http://127.0.0.1:{port}/mcp", token=token, http_log=log_path
            )
            yield {"stdio": stdio, "http": http}
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


# --------------------------------------------------------------------------------------------
# The scenarios: each returns {framework: record}; a record holds what the model is handed
# --------------------------------------------------------------------------------------------


def new_record(fw: str, transport: str, library: str) -> dict[str, Any]:
    return {"client": fw, "transport": transport, "library": library, "tools": {}, "steps": {}}


def dist_version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


async def scenario_pydantic_ai(conn: Conn) -> dict[str, dict[str, Any]]:
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.messages import ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    rec = new_record("pydantic-ai", conn.transport, f"pydantic-ai-slim {dist_version('pydantic-ai-slim')}")
    steps = list(STEPS.items())
    state = {"n": 0, "t": time.monotonic()}

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        i = state["n"]
        state["n"] += 1
        if i == 0:
            rec["instructions_to_model"] = info.instructions
            for t in info.function_tools:
                rec["tools"][t.name] = {"description": t.description, "schema": t.parameters_json_schema}
        else:
            label = steps[i - 1][0]
            out: dict[str, Any] = {"elapsed": time.monotonic() - state["t"], "parts": []}
            for part in messages[-1].parts:
                if getattr(part, "tool_call_id", None) != f"call-{i - 1}":
                    continue
                if isinstance(part, ToolReturnPart):
                    # What the provider adapters (OpenAI, Bedrock, Cohere...) send for a tool return.
                    out["text"] = part.model_response_str()
                    out["is_error"] = part.outcome != "success"
                elif isinstance(part, RetryPromptPart):
                    out["text"] = part.model_response()
                    out["is_error"] = True
                out["parts"].append({"kind": type(part).__name__, "content": repr(part.content)[:3000]})
            rec["steps"][label] = out
        state["t"] = time.monotonic()
        if i < len(steps):
            tool, args = steps[i][1]
            return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id=f"call-{i}")])
        return ModelResponse(parts=[TextPart("done")])

    if conn.transport == "stdio":
        client: Any = StdioTransport(
            conn.command, conn.args, env=conn.env, cwd=conn.cwd, keep_alive=False, log_file=conn.log
        )
        toolset = MCPToolset(client, max_retries=5, read_timeout=CALL_TIMEOUT)
    else:
        toolset = MCPToolset(conn.url, headers=conn.headers, max_retries=5, read_timeout=CALL_TIMEOUT)
    try:
        await Agent(FunctionModel(model), toolsets=[toolset]).run("go")
    except BaseException as exc:
        rec["fatal"] = exception_text(exc)

    if conn.transport == "http":

        async def noauth() -> None:
            ts = MCPToolset(conn.url)
            async with ts:
                await ts.list_tools()

        await record_noauth(rec, noauth)
    return {"pydantic-ai": rec}


async def scenario_openai_agents(conn: Conn) -> dict[str, dict[str, Any]]:
    from agents import Agent, Runner, Usage, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.mcp import MCPServerStdio, MCPServerStreamableHttp
    from agents.models.interface import Model
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    set_tracing_disabled(True)
    library = f"openai-agents {dist_version('openai-agents')}"
    steps = list(STEPS.items()) + list(NULL_STEPS.items())

    class ScriptedModel(Model):
        """A model that calls the steps' tools in turn and records what it is handed."""

        def __init__(self, rec: dict[str, Any], strict: bool) -> None:
            self.rec, self.strict, self.n, self.t = rec, strict, 0, time.monotonic()

        async def get_response(  # noqa: A002 (the interface names its argument `input`)
            self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **kw
        ):
            i = self.n
            self.n += 1
            if i == 0:
                self.rec["instructions_to_model"] = system_instructions
                for t in tools:
                    self.rec["tools"][t.name] = {
                        "description": t.description,
                        "schema": t.params_json_schema,
                        "strict": getattr(t, "strict_json_schema", None),
                    }
            else:
                label = steps[i - 1][0]
                out: dict[str, Any] = {"elapsed": time.monotonic() - self.t}
                for item in input if isinstance(input, list) else []:
                    d = item if isinstance(item, dict) else item.model_dump()
                    if d.get("type") == "function_call_output" and d.get("call_id") == f"call-{i - 1}":
                        out["output"] = d.get("output")
                        out["text"] = blocks_text(d.get("output"))
                self.rec["steps"][label] = out
            self.t = time.monotonic()
            if i < len(steps):
                tool, args = steps[i][1]
                if self.strict:
                    args = strict_args(args, self.rec["tools"][tool]["schema"])
                self.rec.setdefault("sent", {})[steps[i][0]] = args
                call = ResponseFunctionToolCall(
                    type="function_call",
                    call_id=f"call-{i}",
                    name=tool,
                    arguments=json.dumps(args),
                    id=f"fc-{i}",
                    status="completed",
                )
                return ModelResponse(output=[call], usage=Usage(), response_id=None)
            text = ResponseOutputText(type="output_text", text="done", annotations=[])
            msg = ResponseOutputMessage(id="msg", type="message", role="assistant", status="completed", content=[text])
            return ModelResponse(output=[msg], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kw: Any):
            raise NotImplementedError

    if conn.transport == "stdio":
        server: Any = MCPServerStdio(
            {"command": conn.command, "args": conn.args, "env": conn.env, "cwd": conn.cwd},
            name="code-executor",
            client_session_timeout_seconds=CALL_TIMEOUT,
        )
    else:
        server = MCPServerStreamableHttp(
            {"url": conn.url, "headers": conn.headers, "timeout": 30},
            name="code-executor",
            client_session_timeout_seconds=CALL_TIMEOUT,
        )
    recs = {}
    try:
        async with server:
            for fw, strict in (("openai-agents", False), ("openai-agents-strict", True)):
                rec = recs[fw] = new_record(fw, conn.transport, library)
                agent = Agent(
                    name="probe", model=ScriptedModel(rec, strict), mcp_servers=[server],
                    mcp_config={"convert_schemas_to_strict": strict},
                )
                try:
                    await Runner.run(agent, "go", max_turns=len(steps) + 2)
                except BaseException as exc:
                    rec["fatal"] = exception_text(exc)
    except BaseException as exc:
        for fw in ("openai-agents", "openai-agents-strict"):
            recs.setdefault(fw, new_record(fw, conn.transport, library))["fatal"] = exception_text(exc)

    if conn.transport == "http":

        async def noauth() -> None:
            async with MCPServerStreamableHttp({"url": conn.url}) as s:
                await s.list_tools()

        first = recs["openai-agents"]
        await record_noauth(first, noauth)
        recs["openai-agents-strict"]["steps"]["noauth"] = first["steps"]["noauth"]
    return recs


async def scenario_fastmcp(conn: Conn) -> dict[str, dict[str, Any]]:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
    from fastmcp.exceptions import ToolError

    rec = new_record("fastmcp", conn.transport, f"fastmcp {dist_version('fastmcp')}")
    if conn.transport == "stdio":
        transport: Any = StdioTransport(
            conn.command, conn.args, env=conn.env, cwd=conn.cwd, keep_alive=False, log_file=conn.log
        )
    else:
        transport = StreamableHttpTransport(conn.url, headers=conn.headers)
    try:
        async with Client(transport, timeout=CALL_TIMEOUT) as client:
            rec["instructions_to_model"] = None  # a host decides; fastmcp exposes them
            for t in await client.list_tools():
                rec["tools"][t.name] = {"description": t.description, "schema": t.input_schema}
            for label, (tool, args) in STEPS.items():
                out: dict[str, Any] = {}
                t0 = time.monotonic()
                try:
                    res = await client.call_tool(tool, args)
                    out["text"] = blocks_text(res.content)
                    out["is_error"] = res.is_error
                    out["structured"] = res.structured_content
                except ToolError as exc:
                    # What a host gets for an error reply: the ToolError (its message is the first text block).
                    out["text"] = str(exc)
                    out["is_error"] = True
                except BaseException as exc:
                    out["raised"] = exception_text(exc)
                out["elapsed"] = time.monotonic() - t0
                rec["steps"][label] = out
    except BaseException as exc:
        rec["fatal"] = exception_text(exc)

    if conn.transport == "http":

        async def noauth() -> None:
            async with Client(conn.url) as c:
                await c.list_tools()

        await record_noauth(rec, noauth)
    return {"fastmcp": rec}


async def scenario_mcp2(conn: Conn) -> dict[str, dict[str, Any]]:
    from mcp import Client, StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    rec = new_record("mcp2", conn.transport, f"mcp {dist_version('mcp')} Client")
    if conn.transport == "stdio":
        server: Any = StdioServerParameters(command=conn.command, args=conn.args, env=conn.env, cwd=conn.cwd)
    else:
        server = streamable_http_client(conn.url, http_client=create_mcp_http_client(headers=conn.headers))
    try:
        async with Client(server, read_timeout_seconds=CALL_TIMEOUT) as client:
            rec["instructions_to_model"] = None  # exposed as Client.instructions; a host decides
            rec["instructions_exposed"] = client.instructions
            for t in (await client.list_tools()).tools:
                rec["tools"][t.name] = {"description": t.description, "schema": t.input_schema}
            for label, (tool, args) in STEPS.items():
                out: dict[str, Any] = {}
                t0 = time.monotonic()
                try:
                    res = await client.call_tool(tool, args)
                    out["text"] = blocks_text(res.content)
                    out["is_error"] = bool(res.is_error)
                    out["structured"] = res.structured_content
                    out["meta"] = res.meta
                except BaseException as exc:
                    out["raised"] = exception_text(exc)
                out["elapsed"] = time.monotonic() - t0
                rec["steps"][label] = out
    except BaseException as exc:
        rec["fatal"] = exception_text(exc)

    if conn.transport == "http":

        async def noauth() -> None:
            async with Client(conn.url) as c:
                await c.list_tools()

        await record_noauth(rec, noauth)
    return {"mcp2": rec}


async def record_noauth(rec: dict[str, Any], attempt: Callable[[], Any], timeout: float = 20) -> None:
    rec["steps"]["noauth"] = await attempt_without_token(attempt, timeout)


def scenario_mcp1_venv(fw: str, conn: Conn) -> dict[str, dict[str, Any]]:
    """langchain-mcp-adapters and the mcp 1.x ClientSession, in their own venv."""
    python = mcp1_python()
    scenario: dict[str, Any] = {
        "client": "langchain" if fw == "langchain" else "mcp1",
        "transport": conn.transport,
        "steps": [{"label": label, "tool": tool, "args": args} for label, (tool, args) in STEPS.items()],
    }
    if conn.transport == "stdio":
        scenario.update(command=conn.command, args=conn.args, env=conn.env, cwd=conn.cwd, errlog=str(conn.log))
    else:
        scenario.update(url=conn.url, headers=conn.headers)
        scenario["steps"].append({"label": "noauth", "kind": "noauth"})
    proc = subprocess.run(
        [python, str(DRIVER)], input=json.dumps(scenario), capture_output=True, text=True, timeout=110, cwd=conn.cwd
    )
    try:
        rec = json.loads(proc.stdout)
    except ValueError:
        rec = {"client": fw, "transport": conn.transport, "tools": {}, "steps": {}}
        rec["fatal"] = f"driver exited {proc.returncode}: {proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    rec["client"] = fw
    return {fw: rec}


SCENARIOS = {
    "pydantic-ai": scenario_pydantic_ai,
    "openai-agents": scenario_openai_agents,
    "openai-agents-strict": scenario_openai_agents,
    "fastmcp": scenario_fastmcp,
    "mcp2": scenario_mcp2,
}


@pytest.fixture(scope="module")
def records(conns: dict[str, Conn]):
    """`records(fw, transport)`: the record of that client's scenario, run once per module."""
    cache: dict[tuple[str, str], dict[str, Any]] = {}

    def get(fw: str, transport: str) -> dict[str, Any]:
        if (fw, transport) not in cache:
            conn = conns[transport]
            if fw in ("langchain", "mcp1"):
                got = scenario_mcp1_venv(fw, conn)
            else:
                need_module(fw)
                got = asyncio.run(asyncio.wait_for(SCENARIOS[fw](conn), 110))
            for name, rec in got.items():
                rec["server_log"] = conn.server_log()
                cache[(name, transport)] = rec
        rec = cache[(fw, transport)]
        return rec

    get.cache = cache  # type: ignore[attr-defined]
    return get


def show(rec: dict[str, Any], label: str | None = None) -> str:
    """The record (or one step of it) for an assertion message."""
    body = rec["steps"].get(label) if label else {k: v for k, v in rec.items() if k != "server_log"}
    text = json.dumps(body, indent=1, default=str)[:5000]
    return f"{rec['client']} over {rec['transport']} ({rec.get('library')}): {text}\n--- fatal: {rec.get('fatal')}"


def step(rec: dict[str, Any], label: str) -> dict[str, Any]:
    assert not rec.get("fatal"), show(rec) + "\n--- server log:\n" + rec.get("server_log", "")
    out = rec["steps"].get(label)
    assert out is not None, f"no {label!r} step recorded: " + show(rec)
    return out


def model_text(out: dict[str, Any]) -> str:
    return out.get("text") if out.get("text") is not None else out.get("raised", "")


# --------------------------------------------------------------------------------------------
# The tests
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fw,transport", ALL)
def test_lists_our_tools(records, fw: str, transport: str) -> None:
    rec = records(fw, transport)
    assert not rec.get("fatal"), show(rec) + "\n--- server log:\n" + rec.get("server_log", "")
    assert set(rec["tools"]) == OUR_TOOLS, show(rec)
    for name in ("executeTypescript", "executePython"):
        tool = rec["tools"][name]
        assert "code" in tool["schema"]["properties"], show(rec)
        assert "allowedTools" in tool["schema"]["properties"], show(rec)


@pytest.mark.parametrize("fw,transport", ALL)
def test_exec_descriptions_say_search_first_and_allowed_tools(records, fw: str, transport: str) -> None:
    """The server's instructions do not reach the model through most frameworks (openai-agents,
    langchain, pydantic-ai drop them by default): the code tools' own descriptions must say to find
    tools with searchTools first, and that the code may call only what allowedTools lists."""
    rec = records(fw, transport)
    assert not rec.get("fatal"), show(rec)
    for name, call in (("executeTypescript", "callMCPTool"), ("executePython", "call_mcp_tool")):
        desc = rec["tools"][name]["description"] or ""
        seen = f"{name}'s description, as {fw} hands it to the model"
        assert "searchTools" in desc, f"{seen}, never names searchTools: {desc!r}"
        assert "allowedTools" in desc, f"{seen}, never names allowedTools: {desc!r}"
        if call in desc:
            assert desc.index("searchTools") < desc.index(call), f"{name}: searchTools should come first: {desc!r}"


@pytest.mark.parametrize("lang", ["ts", "py"])
@pytest.mark.parametrize("fw,transport", ALL)
def test_a_run_with_a_tool_call_reaches_the_model(records, fw: str, transport: str, lang: str) -> None:
    rec = records(fw, transport)
    out = step(rec, lang)
    text = model_text(out)
    assert not out.get("raised") and not out.get("is_error"), show(rec, lang)
    assert "zone-UTC" in text, "the returned value is not in what the model gets: " + show(rec, lang)
    assert f"{lang}-printed" in text, "the printed output is not in what the model gets: " + show(rec, lang)
    assert_no_nested_json(text)


@pytest.mark.parametrize("fw,transport", ALL)
def test_search_tools_reaches_the_model(records, fw: str, transport: str) -> None:
    rec = records(fw, transport)
    out = step(rec, "search")
    text = model_text(out)
    assert not out.get("raised") and not out.get("is_error"), show(rec, "search")
    assert "mcp__time__get_current_time" in text, show(rec, "search")
    assert_no_nested_json(text)


@pytest.mark.parametrize("fw,transport", ALL)
def test_error_reaches_the_model_readably(records, fw: str, transport: str) -> None:
    """`throw new Error('boom')`: the model reads "boom" plainly, not a JSON report escaped into a
    JSON string (pydantic-ai prefers structuredContent on errors and wraps it in {"error": ...})."""
    rec = records(fw, transport)
    out = step(rec, "error")
    text = model_text(out)
    assert "boom" in text, "the error is not in what the model gets: " + show(rec, "error")
    # openai-agents hands the model only the text (isError is dropped): the text must read as an error.
    assert out.get("is_error") or out.get("raised") or re.search(r"\berror\b", text, re.I), (
        "the error reached the model as a success: " + show(rec, "error")
    )
    assert_no_nested_json(text)


@pytest.mark.parametrize("fw,transport", [(fw, t) for fw in ("mcp2", "mcp1") for t in TRANSPORTS])
def test_error_reply_carries_its_report_in_meta(records, fw: str, transport: str) -> None:
    """An error reply has no structuredContent (clients that prefer it would hand the model the
    JSON report); programs find the full report in `_meta["code-executor/report"]`."""
    rec = records(fw, transport)
    out = step(rec, "error")
    assert out.get("is_error") and not out.get("raised"), show(rec, "error")
    assert out.get("structured") is None, "an error reply still carries structuredContent: " + show(rec, "error")
    report = (out.get("meta") or {}).get("code-executor/report")
    assert isinstance(report, dict), "no _meta['code-executor/report'] on the error reply: " + show(rec, "error")
    assert report.get("success") is False and "boom" in str(report.get("error")), show(rec, "error")


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_missing_token_is_explained(records, fw: str) -> None:
    """Connecting over HTTP without the bearer token: what the framework raises names the token or
    the authorization, not only "Server returned an error response"."""
    rec = records(fw, "http")
    out = rec["steps"].get("noauth")
    assert out is not None, show(rec)
    assert not out.get("hung"), f"{fw} hung on the 401 answer: " + show(rec, "noauth")
    assert out.get("raised"), f"{fw} connected without the token: " + show(rec, "noauth")
    assert TOKEN_WORDS.search(out["raised"]), f"{fw} does not say why it was refused: " + show(rec, "noauth")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_strict_schemas_let_optional_fields_be_null(records, transport: str) -> None:
    """openai-agents' strict mode makes every property required: a strict model can only leave out
    allowedTools, timeoutMs, searchTools' server/limit/detail by sending null, so they must be
    nullable in the schema the model gets (and null must mean "not given")."""
    rec = records("openai-agents-strict", transport)
    assert not rec.get("fatal"), show(rec)
    wanted = {
        "executeTypescript": ("allowedTools", "timeoutMs"),
        "executePython": ("allowedTools", "timeoutMs"),
        "searchTools": ("server", "limit", "detail"),
    }
    for tool, fields in wanted.items():
        t = rec["tools"][tool]
        assert t["strict"] is True, f"{tool} was not converted to strict: {t}"
        for f in fields:
            assert f in t["schema"]["required"], t
            assert allows_null(t["schema"]["properties"][f]), (
                f"{tool}.{f} is required but not nullable in the strict schema: a strict model must invent a "
                f"value: {json.dumps(t['schema'])}"
            )


@pytest.mark.parametrize("fw,transport", OPENAI)
def test_explicit_nulls_mean_not_given(records, fw: str, transport: str) -> None:
    rec = records(fw, transport)
    out = step(rec, "nulls")
    text = model_text(out)
    assert "nulls-42" in text and "nulls-printed" in text, "explicit nulls were refused: " + show(rec, "nulls")
    out = step(rec, "search_nulls")
    assert "mcp__time__get_current_time" in model_text(out), "explicit nulls were refused: " + show(rec, "search_nulls")


def test_zz_bytes_table(records) -> None:
    """The bytes each framework hands its model for the success (TypeScript, Python) and the error
    case, and whether the server's instructions reach the model; written to target/framework-bytes.json."""
    rows = []
    for fw, transport in ALL:
        try:
            rec = records(fw, transport)
        except pytest.skip.Exception as e:
            rows.append({"client": fw, "transport": transport, "skipped": str(e)})
            continue
        row: dict[str, Any] = {"client": fw, "transport": transport, "library": rec.get("library")}
        for label in ("ts", "py", "search", "error"):
            out = rec["steps"].get(label) or {}
            text = model_text(out)
            row[label] = len(text.encode()) if text else None
            row[f"{label}_s"] = round(out["elapsed"], 2) if isinstance(out.get("elapsed"), (int, float)) else None
        row["error_text"] = model_text(rec["steps"].get("error") or {})[:200]
        # The tool definitions as the model gets them (names, descriptions, parameter schemas).
        row["tools"] = len(
            json.dumps(
                {n: {"description": t.get("description"), "schema": t.get("schema")} for n, t in rec["tools"].items()}
            ).encode()
        ) if rec["tools"] else None
        row["instructions_to_model"] = bool(rec.get("instructions_to_model"))
        row["fatal"] = bool(rec.get("fatal"))
        rows.append(row)
    BYTES_FILE.parent.mkdir(parents=True, exist_ok=True)
    BYTES_FILE.write_text(json.dumps(rows, indent=1))
    # Everything recorded (what each model was handed, step by step), for a closer look.
    recs = {f"{fw} {t}": {k: v for k, v in r.items() if k != "server_log"} for (fw, t), r in records.cache.items()}
    RECORDS_FILE.write_text(json.dumps(recs, indent=1, default=str))
    head = (
        f"{'client':22} {'transport':9} {'tools B':>7} {'ts B':>6} {'py B':>6} {'search B':>8} {'error B':>7} "
        f"{'ts s':>6} {'py s':>6} {'instr':>5}  error as the model gets it"
    )
    title = f"What each framework hands its model (bytes; also in {BYTES_FILE}, records in {RECORDS_FILE.name}):"
    lines = ["", title, head, "-" * len(head)]
    for r in rows:
        if "skipped" in r:
            lines.append(f"{r['client']:22} {r['transport']:9} skipped: {r['skipped'][:80]}")
            continue
        lines.append(
            f"{r['client']:22} {r['transport']:9} {r['tools'] or '-':>7} {r['ts'] or '-':>6} {r['py'] or '-':>6} "
            f"{r['search'] or '-':>8} "
            f"{r['error'] or '-':>7} {r['ts_s'] or '-':>6} {r['py_s'] or '-':>6} "
            f"{'yes' if r['instructions_to_model'] else 'no':>5}  "
            f"{json.dumps(r['error_text'])[:90]}"
        )
    print("\n".join(lines))
