"""Long executions as MCP tasks (the `io.modelcontextprotocol/tasks` extension): a client that
declares the extension with its request gets a task handle for an execution still running after a
second, polls `tasks/get` until its result, answers its questions with `tasks/update` and can end
it with `tasks/cancel`; a client that does not gets today's behaviour. The Python SDK has no
client for the extension, so the wire is driven by hand over streamable HTTP (protocol
2026-07-28: the client's info and capabilities ride in each request's `_meta`), exactly as the
extension defines it.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import harness
from harness import wire_report, E2EEnv

PROTOCOL = "2026-07-28"
TASKS = {"io.modelcontextprotocol/tasks": {}}


class Wire:
    """A hand-driven 2026-07-28 client over streamable HTTP: each request carries its
    `_meta` (protocol, client info, capabilities) and the standard headers. `source` picks the
    local address, and with it the client session of a server without a token."""

    def __init__(self, port: int, capabilities: dict[str, Any] | None = None, source: str = "127.0.0.1"):
        self.port = port
        self.capabilities = {"extensions": TASKS} if capabilities is None else capabilities
        self.source = source
        self.ids = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The next JSON-RPC request, its `_meta` saying what a 2026-07-28 client says."""
        self.ids += 1
        meta = {
            "io.modelcontextprotocol/protocolVersion": PROTOCOL,
            "io.modelcontextprotocol/clientInfo": {"name": "wire", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": self.capabilities,
        }
        return {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": {**params, "_meta": meta}}

    def send(self, method: str, params: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
        """The JSON-RPC response (with `result` or `error`)."""
        body = self.request(method, params)
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL,
            "Mcp-Method": method,
        }
        name = params.get("name") or params.get("taskId")
        if name:
            headers["Mcp-Name"] = name
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout, source_address=(self.source, 0))
        try:
            conn.request("POST", "/mcp", body=json.dumps(body), headers=headers)
            response = conn.getresponse()
            text = response.read().decode()
        finally:
            conn.close()
        assert (response.getheader("content-type") or "").startswith("application/json"), text
        reply = json.loads(text)
        # rmcp answers some refusals (a missing capability, an unknown method) with an HTTP
        # error status and the JSON-RPC error.
        assert response.status == 200 or (400 <= response.status < 500 and "error" in reply), (response.status, text)
        return reply

    def call(self, code: str, timeout: float = 30, **args: Any) -> dict[str, Any]:
        """`executeTypescript`'s result: a CallToolResult or a CreateTaskResult (`timeoutMs` 20 s
        unless given)."""
        arguments = {"code": code, "timeoutMs": 20000, **args}
        reply = self.send("tools/call", {"name": "executeTypescript", "arguments": arguments}, timeout)
        assert "result" in reply, reply
        return reply["result"]

    def run(self, code: str, **args: Any) -> dict[str, Any]:
        """The CallToolResult of `executeTypescript`, from the request or from its task."""
        result = self.call(code, **args)
        if result["resultType"] == "task":
            done = self.wait(result["taskId"])
            assert done["status"] == "completed", done
            return done["result"]
        return result

    def task(self, task_id: str) -> dict[str, Any]:
        reply = self.send("tasks/get", {"taskId": task_id})
        assert "result" in reply, reply
        assert reply["result"]["resultType"] == "complete" and reply["result"]["taskId"] == task_id, reply
        return reply["result"]

    def wait(self, task_id: str, until: tuple[str, ...] = ("completed", "failed", "cancelled"), timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            seen = self.task(task_id)
            if seen["status"] in until:
                return seen
            time.sleep(seen.get("pollIntervalMs", 1000) / 4000)
        pytest.fail(f"task {task_id} not {until} within {timeout} s: {seen}")


class StdioWire(Wire):
    """The same client over stdio: JSON-RPC lines to a `serve` process (the session `stdio`)."""

    def __init__(self, proc: subprocess.Popen[bytes], capabilities: dict[str, Any] | None = None):
        super().__init__(0, capabilities)
        self.proc = proc
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(line) for line in proc.stdout], daemon=True).start()

    def send(self, method: str, params: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
        body = self.request(method, params)
        assert self.proc.stdin
        self.proc.stdin.write((json.dumps(body) + "\n").encode())
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.lines.get(timeout=max(0.01, deadline - time.monotonic())))
            if message.get("id") == self.ids and ("result" in message or "error" in message):
                return message


@contextlib.contextmanager
def server(root: Path, settings: dict[str, str], servers: tuple[str, ...] = ()):
    """A `serve --http` process on loopback (no token: the session is the peer's address)."""
    env = {"CODE_EXECUTOR_MAX_TIMEOUT_MS": "2000", "CODE_EXECUTOR_TIMEOUT_MS": "1000", **settings}
    with harness.http_server(root, env, servers) as (port, _, proc):
        yield port, proc


def test_a_task_outlives_the_request_and_delivers_its_result(tmp_path):
    with server(tmp_path, {"CODE_EXECUTOR_TASK_MAX_MS": "30000"}) as (port, _):
        wire = Wire(port)
        discovered = wire.send("server/discover", {})["result"]
        assert discovered["capabilities"]["extensions"] == TASKS, discovered
        # Six seconds of work with a request that gives up after four, past max_timeout_ms.
        code = "console.log('started'); await new Promise((r) => setTimeout(r, 6000)); ({slept: 6})"
        t0 = time.monotonic()
        created = wire.call(code, timeout=4, timeoutMs=20000)
        assert time.monotonic() - t0 < 4
        assert created["resultType"] == "task" and created["status"] == "working", created
        assert created["ttlMs"] == 30000 + 600000 and created["pollIntervalMs"] == 1000, created
        task_id = created["taskId"]
        assert len(task_id) == 36
        # Working while it runs, and findable at once.
        seen = wire.task(task_id)
        assert seen["status"] == "working" and "result" not in seen, seen
        assert seen["createdAt"] == created["createdAt"]
        done = wire.wait(task_id)
        elapsed = time.monotonic() - t0
        assert elapsed > 6, elapsed
        assert done["status"] == "completed", done
        result = done["result"]
        # The very CallToolResult the call would have returned.
        assert result["isError"] is False, result
        assert wire_report(result)["success"] is True
        assert wire_report(result)["result"] == {"slept": 6}
        assert wire_report(result)["output"] == "started\n"
        assert "started" in result["content"][0]["text"]
        # Kept ten minutes from its end (ttlMs counts from its creation).
        assert 600000 + 6000 <= done["ttlMs"] < 600000 + 20000, done
        # Polling again is harmless: the same result.
        assert wire.task(task_id)["result"] == result
        # A code error is a completed task with an isError result, not a failed one.
        created = wire.call("await new Promise((r) => setTimeout(r, 1500)); throw new Error('on purpose')")
        assert created["resultType"] == "task", created
        done = wire.wait(created["taskId"])
        assert done["status"] == "completed" and done["result"]["isError"] is True, done
        assert "on purpose" in wire_report(done["result"])["error"]
        # A short execution answers in its request, as before.
        quick = wire.call("6 * 7")
        assert quick["resultType"] == "complete" and wire_report(quick)["result"] == 42, quick


def test_without_the_extension_a_call_behaves_as_before(tmp_path):
    with server(tmp_path, {"CODE_EXECUTOR_TASK_MAX_MS": "30000"}) as (port, _):
        plain = Wire(port, capabilities={})
        reply = plain.call("await new Promise((r) => setTimeout(r, 4000)); 'late'", timeoutMs=20000)
        # No task: the result in the request, its timeout capped by max_timeout_ms.
        assert reply["resultType"] == "complete", reply
        assert reply["isError"] is True
        assert "timed out after 2000 ms" in wire_report(reply)["error"], reply
        # The tasks methods need the extension declared.
        error = plain.send("tasks/get", {"taskId": "00000000-0000-0000-0000-000000000000"})["error"]
        # "Missing required client capability" (rmcp's code for it), naming the extension.
        assert error["code"] == -32021 and error["data"]["requiredCapabilities"]["extensions"] == TASKS, error
    # With tasks off, the extension is not offered and nothing becomes a task.
    with server(tmp_path / "off", {"CODE_EXECUTOR_MAX_TASKS_PER_SESSION": "0"}) as (port, _):
        wire = Wire(port)
        assert "extensions" not in wire.send("server/discover", {})["result"]["capabilities"]
        reply = wire.call("await new Promise((r) => setTimeout(r, 1500)); 'done'")
        assert reply["resultType"] == "complete" and wire_report(reply)["result"] == "done", reply
        assert wire.send("tasks/get", {"taskId": "x"})["error"]["code"] == -32601


def test_the_task_maximum_is_enforced(tmp_path):
    settings = {"CODE_EXECUTOR_TASK_MAX_MS": "5000", "CODE_EXECUTOR_ASK_TIMEOUT_MS": "60000"}
    with server(tmp_path, settings) as (port, _):
        wire = Wire(port)
        # A timeoutMs beyond task_max_ms is capped there.
        t0 = time.monotonic()
        created = wire.call("while (true) {}", timeoutMs=600000)
        assert created["ttlMs"] == 5000 + 600000, created
        done = wire.wait(created["taskId"])
        assert done["status"] == "completed" and done["result"]["isError"] is True, done
        error = wire_report(done["result"])["error"]
        # Its timeout and the task's own end are both 5 s away; the task's, counted from the
        # call, comes first.
        assert "5000 ms" in error and ("timed out" in error or "task_max_ms" in error), error
        assert time.monotonic() - t0 < 15
        # Time spent waiting for the client's answers does not count against timeoutMs, but the
        # task as a whole still ends at task_max_ms.
        asking = Wire(port, capabilities={"sampling": {}, "extensions": TASKS})
        t0 = time.monotonic()
        created = asking.call("return await llm.ask('will nobody answer?')", timeoutMs=5000)
        assert created["resultType"] == "task", created
        waiting = asking.wait(created["taskId"], until=("input_required",), timeout=10)
        assert waiting["inputRequests"]["q1"]["method"] == "sampling/createMessage", waiting
        done = asking.wait(created["taskId"])
        assert time.monotonic() - t0 < 15
        assert done["status"] == "completed" and done["result"]["isError"] is True, done
        error = wire_report(done["result"])["error"]
        assert "the task reached its limit of 5000 ms (task_max_ms" in error, error


def test_questions_of_a_task_are_answered_with_tasks_update(tmp_path):
    with server(tmp_path, {"CODE_EXECUTOR_TASK_MAX_MS": "30000"}) as (port, _):
        wire = Wire(port, capabilities={"sampling": {}, "extensions": TASKS})
        created = wire.call("const a = await llm.ask('first?'); const b = await llm.ask('second?'); return [a, b]")
        # Asked within the first second: the call becomes a task at once, its question waiting.
        assert created["resultType"] == "task", created
        task_id = created["taskId"]
        for n, (prompt, answer) in enumerate([("first?", "one"), ("second?", "two")], start=1):
            seen = wire.wait(task_id, until=("input_required",), timeout=10)
            (key, request), = seen["inputRequests"].items()
            assert key == f"q{n}", seen  # never reused over the task's life
            assert request["method"] == "sampling/createMessage"
            assert request["params"]["messages"][-1]["content"]["text"] == prompt
            reply = {"role": "assistant", "content": {"type": "text", "text": answer}, "model": "m"}
            ack = wire.send("tasks/update", {"taskId": task_id, "inputResponses": {key: reply, "q99": reply}})
            assert ack == {"jsonrpc": "2.0", "id": ack["id"], "result": {"resultType": "complete"}}, ack
        done = wire.wait(task_id)
        assert done["status"] == "completed", done
        assert wire_report(done["result"])["result"] == ["one", "two"], done
        assert wire_report(done["result"])["samplingRounds"] == 2


def test_cancelling_a_task_stops_its_worker(tmp_path):
    audit_dir = tmp_path / "audit"
    settings = {"CODE_EXECUTOR_TASK_MAX_MS": "120000", "CODE_EXECUTOR_AUDIT_LOG_DIR": str(audit_dir)}
    with server(tmp_path, settings, servers=("asker",)) as (port, _):
        wire = Wire(port)

        def archived() -> int:
            """How many times the downstream `archive_item` was called, asked by another execution."""
            counts = wire.run("return await callMCPTool('mcp__asker__calls', {})", allowedTools=["mcp__asker__calls"])
            return wire_report(counts)["result"].get("archive_item", 0)

        # The worker's work leaves a mark downstream ten times a second.
        code = "while (true) { await callMCPTool('mcp__asker__archive_item', {id: 1}); await new Promise((r) => setTimeout(r, 100)); }"
        created = wire.call(code, timeoutMs=120000, allowedTools=["mcp__asker__archive_item"])
        task_id = created["taskId"]
        deadline = time.monotonic() + 30
        while (first := archived()) == 0 and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(1.5)
        assert archived() > first > 0, wire.task(task_id)
        ack = wire.send("tasks/cancel", {"taskId": task_id})
        assert ack["result"] == {"resultType": "complete"}, ack
        done = wire.wait(task_id, timeout=15)
        assert done["status"] == "cancelled" and "result" not in done, done
        assert "cancelled" in done["statusMessage"], done
        # Once cancelled, nothing of the loop runs any more.
        after = archived()
        time.sleep(2)
        assert archived() == after, "the cancelled task's worker still calls downstream"
        records = harness.audit_records(audit_dir, want=5, timeout=15, event="execution")
        outcomes = {r["outcome"] for r in records if r.get("event") == "execution" and r["allowedTools"] == ["mcp__asker__archive_item"]}
        assert outcomes == {"cancelled"}, records
        # The session goes on.
        assert wire.call("'still here'")["structuredContent"]["result"] == "still here"
        # Cancelling again, or a finished task, is acknowledged and changes nothing.
        assert "result" in wire.send("tasks/cancel", {"taskId": task_id})
        assert wire.task(task_id)["status"] == "cancelled"


def test_a_task_belongs_to_its_session(tmp_path):
    settings = {"CODE_EXECUTOR_TASK_MAX_MS": "30000", "CODE_EXECUTOR_MAX_TASKS_PER_SESSION": "1"}
    with server(tmp_path, settings) as (port, _):
        owner = Wire(port)
        # Another client session: another peer address (the session without a token).
        stranger = Wire(port, source="127.0.0.2")
        created = owner.call("await new Promise((r) => setTimeout(r, 4000)); 'mine'")
        task_id = created["taskId"]
        unknown = stranger.send("tasks/get", {"taskId": "f" * 36})["error"]
        assert unknown["code"] == -32602 and "unknown task" in unknown["message"], unknown
        for method, extra in [("tasks/get", {}), ("tasks/cancel", {}), ("tasks/update", {"inputResponses": {}})]:
            error = stranger.send(method, {"taskId": task_id, **extra})["error"]
            # The same answer as for an id never issued: nothing tells the task exists.
            assert error["code"] == -32602, error
            assert error["message"] == unknown["message"].replace("f" * 36, task_id), error
        # The cap is the session's: the owner is at it, the stranger is not.
        refused = owner.call("await new Promise((r) => setTimeout(r, 4000)); 'second'")
        assert refused["resultType"] == "complete" and refused["isError"] is True, refused
        assert "max_tasks_per_session" in refused["content"][0]["text"], refused
        theirs = stranger.call("await new Promise((r) => setTimeout(r, 1500)); 'theirs'")
        assert theirs["resultType"] == "task", theirs
        assert stranger.wait(theirs["taskId"])["result"]["structuredContent"]["result"] == "theirs"
        # The stranger's cancel did nothing: the owner's task completes.
        done = owner.wait(task_id)
        assert done["status"] == "completed" and wire_report(done["result"])["result"] == "mine", done
        # Once it finished, the owner's next task takes the place of the finished one.
        assert owner.call("await new Promise((r) => setTimeout(r, 1500)); 3")["resultType"] == "task"


def test_a_task_over_stdio_asks_and_completes(tmp_path):
    settings = {"CODE_EXECUTOR_MAX_TIMEOUT_MS": "2000", "CODE_EXECUTOR_TIMEOUT_MS": "1000", "CODE_EXECUTOR_TASK_MAX_MS": "30000"}
    e2e = E2EEnv(tmp_path, servers=(), extra_env=settings)
    with open(tmp_path / "server.log", "w") as log:
        proc = subprocess.Popen(
            [str(harness.binary()), "serve"], cwd=e2e.project, env=e2e.env(),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
        )
        try:
            wire = StdioWire(proc, capabilities={"sampling": {}, "extensions": TASKS})
            code = "await new Promise((r) => setTimeout(r, 1500)); return await llm.ask('Go on?')"
            created = wire.call(code)
            assert created["resultType"] == "task", created
            seen = wire.wait(created["taskId"], until=("input_required",), timeout=20)
            request = seen["inputRequests"]["q1"]
            assert request["method"] == "sampling/createMessage", seen
            assert request["params"]["messages"][-1]["content"]["text"] == "Go on?"
            reply = {"role": "assistant", "content": {"type": "text", "text": "over stdio"}, "model": "m"}
            wire.send("tasks/update", {"taskId": created["taskId"], "inputResponses": {"q1": reply}})
            done = wire.wait(created["taskId"])
            assert wire_report(done["result"])["result"] == "over stdio", done
            # The session over stdio is `stdio`: its tasks are its own there too.
            assert wire.send("tasks/get", {"taskId": "x" * 36})["error"]["code"] == -32602
        finally:
            assert proc.stdin
            proc.stdin.close()
            proc.wait(10)


def test_an_unknown_task_id_gets_a_clear_error(tmp_path):
    with server(tmp_path, {}) as (port, _):
        wire = Wire(port)
        for method, extra in [("tasks/get", {}), ("tasks/cancel", {}), ("tasks/update", {"inputResponses": {}})]:
            error = wire.send(method, {"taskId": "no-such-task", **extra})["error"]
            assert error["code"] == -32602, error
            assert error["message"].startswith("unknown task `no-such-task`: no task of this client has that id"), error
            assert "kept 600 s" in error["message"] and "restart" in error["message"]
