"""What a user or a model reads of an exception and of tool result content, and what a client
meets connecting without the token, shared by test_frameworks.py and frameworks/mcp1_driver.py
(which runs in another venv: this module imports nothing beyond the standard library)."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable


def exception_text(exc: BaseException) -> str:
    """Everything a user sees of an exception: its message, exception-group leaves and causes."""
    seen: set[int] = set()
    lines: list[str] = []

    def walk(e: BaseException | None, depth: int = 0) -> None:
        if e is None or id(e) in seen or depth > 12:
            return
        seen.add(id(e))
        lines.append(f"{type(e).__name__}: {e}")
        if isinstance(e, BaseExceptionGroup):
            for sub in e.exceptions:
                walk(sub, depth + 1)
        walk(e.__cause__, depth + 1)
        walk(e.__context__, depth + 1)

    walk(exc)
    return "\n".join(lines)


def blocks_text(content: Any) -> str:
    """The text of MCP content blocks, openai-agents tool output or LangChain message content."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    parts = []
    for block in content or []:
        if isinstance(block, dict):
            if block.get("type") in ("text", "input_text", "output_text"):
                parts.append(block.get("text", ""))
        elif getattr(block, "type", None) == "text":
            parts.append(block.text)
        elif isinstance(block, str):
            parts.append(block)
    return "\n".join(parts)


async def attempt_without_token(attempt: Callable[[], Awaitable[Any]], timeout: float) -> dict[str, Any]:
    """How connecting without the bearer token ended: what was raised, or that it hung or got in."""
    out: dict[str, Any] = {}
    t0 = time.monotonic()
    try:
        await asyncio.wait_for(attempt(), timeout)
        out["text"] = "(connected without the token)"
    except asyncio.TimeoutError as exc:
        out["raised"] = exception_text(exc)
        out["hung"] = True
    except BaseException as exc:
        out["raised"] = exception_text(exc)
    out["elapsed"] = time.monotonic() - t0
    return out
