"""A protected MCP server (streamable HTTP at /mcp) for the e2e tests, built on the MCP Python
SDK's resource-server support: bearer tokens checked by introspection at the authorization
server (`oauth_as.py`), Protected Resource Metadata (RFC 9728) served, 401 with
`WWW-Authenticate` without a valid token. Tools: `read_note` (scope `read`) and `write_note`
(scope `write`: without it, HTTP 403 `insufficient_scope` naming the scope, for step-up).

Run: `python oauth_rs.py --port PORT --as-url http://127.0.0.1:AS_PORT [--transport sse]`
(`sse`: the SDK's legacy HTTP+SSE transport, event stream at /sse, under the same protection). `POST /_control`
`{"prm_resource": "http://..."}` makes the PRM name another resource; `GET /_log` lists the
requests it saw (whether an Authorization header came, never its value).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import httpx2 as httpx
import uvicorn
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer


class IntrospectionVerifier:
    """`TokenVerifier` asking the authorization server (RFC 7662)."""

    def __init__(self, introspect_url: str) -> None:
        self.url = introspect_url

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx.AsyncClient(timeout=10) as http:
            answer = (await http.post(self.url, data={"token": token})).json()
        if not answer.get("active"):
            return None
        return AccessToken(
            token=token,
            client_id=answer["client_id"],
            scopes=(answer.get("scope") or "").split(),
            expires_at=answer.get("exp"),
            resource=answer.get("aud"),
        )


def build_app(port: int, as_url: str, transport: str = "streamable"):  # type: ignore[no-untyped-def]
    endpoint = "/sse" if transport == "sse" else "/mcp"
    resource = f"http://127.0.0.1:{port}{endpoint}"
    verifier = IntrospectionVerifier(f"{as_url}/introspect")
    mcp = MCPServer(
        "secure-notes",
        token_verifier=verifier,
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(as_url),
            resource_server_url=AnyHttpUrl(resource),
            required_scopes=["read"],
            validate_token_resource=True,
        ),
    )

    @mcp.tool()
    def read_note(title: str) -> str:
        """Read a note (needs scope `read`)."""
        return f"note {title}: remember the milk"

    @mcp.tool()
    def write_note(title: str, text: str) -> str:
        """Write a note (needs scope `write`)."""
        return f"saved note {title} ({len(text)} chars)"

    inner = mcp.sse_app() if transport == "sse" else mcp.streamable_http_app()
    control: dict[str, Any] = {"prm_resource": None}
    log: list[dict[str, Any]] = []
    prm_path = f"/.well-known/oauth-protected-resource{endpoint}"

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] != "http":
            return await inner(scope, receive, send)
        path = scope["path"]
        headers = dict(scope["headers"])
        if path == "/_log":
            return await JSONResponse(log)(scope, receive, send)
        if path == "/_control":
            body = await Request(scope, receive).json()
            control.update(body)
            return await JSONResponse({"ok": True})(scope, receive, send)
        if path == prm_path and control["prm_resource"]:
            doc = {"resource": control["prm_resource"], "authorization_servers": [as_url], "scopes_supported": ["read"]}
            return await JSONResponse(doc)(scope, receive, send)
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        entry: dict[str, Any] = {"method": scope["method"], "path": path, "authorization_header": b"authorization" in headers}
        try:
            rpc = json.loads(body) if body else None
        except ValueError:
            rpc = None
        if isinstance(rpc, dict):
            entry["rpc"] = rpc.get("method")
            if rpc.get("method") == "tools/call":
                entry["tool"] = (rpc.get("params") or {}).get("name")
        log.append(entry)
        # Step-up: write_note needs scope `write`, checked here as an HTTP 403 (MCP auth spec).
        if entry.get("tool") == "write_note":
            auth = headers.get(b"authorization", b"").decode()
            token = auth[7:] if auth.lower().startswith("bearer ") else ""
            info = await verifier.verify_token(token) if token else None
            if info is not None and "write" not in info.scopes:
                challenge = (
                    'Bearer error="insufficient_scope", scope="read write", '
                    f'resource_metadata="http://127.0.0.1:{port}{prm_path}", '
                    'error_description="write_note needs scope write"'
                )
                response = JSONResponse(
                    {"error": "insufficient_scope"}, status_code=403, headers={"WWW-Authenticate": challenge}
                )
                return await response(scope, receive, send)
        sent = False

        async def replay():  # type: ignore[no-untyped-def]
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await inner(scope, replay, send)

    return app, mcp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--as-url", required=True)
    parser.add_argument("--transport", choices=["streamable", "sse"], default="streamable")
    args = parser.parse_args()
    app, mcp = build_app(args.port, args.as_url, args.transport)

    async def run() -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=args.port, log_level="warning")
        server = uvicorn.Server(config)
        await server.serve()

    import anyio

    anyio.run(run)


if __name__ == "__main__":
    main()
