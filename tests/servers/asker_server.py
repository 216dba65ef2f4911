"""asker: a downstream MCP server that asks questions, for the e2e tests of code that can ask.

Run with `python asker_server.py` (stdio), or `python asker_server.py --sse PORT` (legacy HTTP+SSE,
protocol 2024-11-05, on 127.0.0.1). Built on the official MCP Python SDK (`MCPServer`).

The questions go the way the negotiated protocol carries them (code-executor connects with
2026-07-28, so as `input_required` rounds; an older client would get standalone requests):
- `confirm(what)`: asks the user (an `Elicit` resolver) and returns the action and the answer.
- `summarize(text)`: asks the client's LLM (a `Sample` resolver) and returns its text.
- `ask_many(n)`: asks the user `n` questions in one round (an `InputRequiredResult` it builds);
  returns how many answers came back with each action.
- `delete_item(id)`: annotated `destructiveHint: true`; `archive_item(id)`: `readOnlyHint: false`.
- `ask_text(parts, repeat=1)` / `sample_text(parts, repeat=1)`: asks the user (a text answer) or
  the client's LLM with the message `parts` joined, `repeat` times over, exactly as given (a
  hostile server: tokens it learnt somewhere, a prompt of mebibytes); returns the answer text.
- `calls()`: how many times each tool was called (so tests can prove a refused call never came).
- resource `notes://todo` and prompt `greet(name)`.
"""

from __future__ import annotations

import sys
import warnings
from collections import Counter

from pydantic import BaseModel

from typing import Annotated

from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve, Sample
from mcp.types import (
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    SamplingMessage,
    TextContent,
    ToolAnnotations,
)

warnings.simplefilter("ignore")

mcp = MCPServer("asker")
CALLS: Counter[str] = Counter()


class Confirm(BaseModel):
    ok: bool


def _ask_confirm(what: str) -> Elicit[Confirm]:
    return Elicit(f"Confirm: {what}?", Confirm)


@mcp.tool()
async def confirm(what: str, answer: Annotated[ElicitationResult[Confirm], Resolve(_ask_confirm)]) -> dict:
    """Ask the user to confirm something; returns the action and the answer."""
    CALLS["confirm"] += 1
    data = answer.data.model_dump() if answer.action == "accept" else None
    return {"action": answer.action, "data": data}


def _ask_summary(text: str) -> Sample:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=f"Summarize: {text}"))
    return Sample([message], max_tokens=100)


@mcp.tool()
async def summarize(text: str, summary: Annotated[CreateMessageResult, Resolve(_ask_summary)]) -> str:
    """Ask the client's LLM to summarize `text`; returns the summary."""
    CALLS["summarize"] += 1
    content = summary.content
    return content.text if isinstance(content, TextContent) else str(content)


@mcp.tool()
async def ask_many(n: int, ctx: Context) -> dict | InputRequiredResult:
    """Ask the user `n` questions at once; count the answers by action."""
    responses = ctx.input_responses
    if not responses:
        CALLS["ask_many"] += 1
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        requests = {
            f"q{i}": ElicitRequest(params=ElicitRequestFormParams(message=f"Question {i}?", requested_schema=schema))
            for i in range(n)
        }
        return InputRequiredResult(input_requests=requests, request_state="asked")
    actions: Counter[str] = Counter()
    for answer in responses.values():
        action = answer.get("action") if isinstance(answer, dict) else getattr(answer, "action", None)
        actions[str(action)] += 1
    return dict(actions)


class Text(BaseModel):
    answer: str


def _ask_text(parts: list[str], repeat: int = 1) -> Elicit[Text]:
    return Elicit("".join(parts) * repeat, Text)


@mcp.tool()
async def ask_text(
    parts: list[str], answer: Annotated[ElicitationResult[Text], Resolve(_ask_text)], repeat: int = 1
) -> str:
    """Ask the user the message `parts` joined (`repeat` times); returns the answer's text or the action."""
    CALLS["ask_text"] += 1
    return answer.data.answer if answer.action == "accept" else answer.action


def _sample_text(parts: list[str], repeat: int = 1) -> Sample:
    text = "".join(parts) * repeat
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text=text))], max_tokens=100)


@mcp.tool()
async def sample_text(
    parts: list[str], summary: Annotated[CreateMessageResult, Resolve(_sample_text)], repeat: int = 1
) -> str:
    """Ask the client's LLM with the prompt `parts` joined (`repeat` times); returns its text."""
    CALLS["sample_text"] += 1
    content = summary.content
    return content.text if isinstance(content, TextContent) else str(content)


@mcp.tool(annotations=ToolAnnotations(destructiveHint=True))
def delete_item(id: int) -> str:
    """Delete an item (destructive)."""
    CALLS["delete_item"] += 1
    return f"deleted {id}"


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False))
def archive_item(id: int) -> str:
    """Archive an item (writes, not destructive)."""
    CALLS["archive_item"] += 1
    return f"archived {id}"


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def calls() -> dict:
    """How many times each tool was called."""
    return dict(CALLS)


@mcp.resource("notes://todo", mime_type="text/plain")
def todo() -> str:
    """The to-do note."""
    return "buy milk; call Ada"


@mcp.prompt()
def greet(name: str) -> str:
    """A greeting prompt."""
    return f"Say hello to {name}."


def serve_sse(port: int) -> None:
    import uvicorn

    from mcp.server.transport_security import TransportSecuritySettings

    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = mcp.sse_app(transport_security=security)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--sse":
        serve_sse(int(sys.argv[2]))
    else:
        mcp.run()
