"""A real OAuth 2.1 authorization server for the e2e tests, built from the MCP Python SDK's
`mcp.server.auth` modules (the provider protocol and its routes: metadata, register, authorize,
token, revoke), in memory, approving every authorization request at once.

Run: `python oauth_as.py --port PORT [--expires-in S]`. Besides the SDK's routes it serves:
- `POST /introspect` (RFC 7662, `token=...`) for the resource server (`oauth_rs.py`);
- `GET /_log`: what it saw, as JSON (no secrets: token, code, verifier and client-secret
  values are replaced by whether they were present);
- `POST /_control` (JSON) to change its behaviour while running:
  `{"issuer_mismatch": true}` (metadata names another issuer), `{"token_mode": "500" | "garbage"
  | "ok"}` (what the token endpoint answers), `{"expires_in": 5}` (lifetime of new access tokens),
  `{"revoke_all": true}` (every access and refresh token forgotten), `{"reset_log": true}`.
"""

from __future__ import annotations

import argparse
import json
import secrets
import time
from typing import Any

import uvicorn
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata, create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

SCOPES = ["read", "write"]
SECRET_FIELDS = {"code", "code_verifier", "refresh_token", "client_secret", "token", "access_token"}


class State:
    def __init__(self, expires_in: int) -> None:
        self.expires_in = expires_in
        self.issuer_mismatch = False
        self.token_mode = "ok"
        self.log: list[dict[str, Any]] = []


class Provider:
    """In-memory provider: clients, codes, tokens; every request is approved."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        # access token -> its refresh token, to revoke both together
        self.pairs: dict[str, str] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or (client.scope or "").split(),
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access = "at-" + secrets.token_urlsafe(24)
        refresh = "rt-" + secrets.token_urlsafe(24)
        expires = int(time.time()) + self.state.expires_in
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        self.pairs[access] = refresh
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.state.expires_in,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        token = self.refresh.get(refresh_token)
        return token if token and token.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if refresh_token.token not in self.refresh:
            raise TokenError("invalid_grant", "refresh token revoked")
        del self.refresh[refresh_token.token]  # rotation
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)
        paired = self.pairs.pop(token.token, None)
        if paired:
            self.refresh.pop(paired, None)

    def revoke_all(self) -> None:
        self.access.clear()
        self.refresh.clear()
        self.pairs.clear()


def redact(items: dict[str, str]) -> dict[str, Any]:
    return {k: (bool(v) if k in SECRET_FIELDS else v) for k, v in items.items()}


def build_app(port: int, expires_in: int) -> Starlette:
    issuer = f"http://127.0.0.1:{port}"
    state = State(expires_in)
    provider = Provider(state)
    registration = ClientRegistrationOptions(enabled=True, valid_scopes=SCOPES, default_scopes=["read"])
    revocation = RevocationOptions(enabled=True)
    sdk_routes = create_auth_routes(
        provider=provider,
        issuer_url=AnyHttpUrl(issuer),
        client_registration_options=registration,
        revocation_options=revocation,
    )

    async def metadata(request: Request) -> Response:
        doc = build_metadata(AnyHttpUrl(issuer), None, registration, revocation).model_dump(
            mode="json", exclude_none=True
        )
        doc["issuer"] = issuer  # exact, no trailing slash
        if state.issuer_mismatch:
            doc["issuer"] = "http://127.0.0.1:1/another-issuer"
        return JSONResponse(doc)

    async def introspect(request: Request) -> Response:
        form = await request.form()
        token = await provider.load_access_token(str(form.get("token", "")))
        if token is None:
            return JSONResponse({"active": False})
        return JSONResponse(
            {
                "active": True,
                "client_id": token.client_id,
                "scope": " ".join(token.scopes),
                "exp": token.expires_at,
                "aud": token.resource,
            }
        )

    async def show_log(request: Request) -> Response:
        return JSONResponse(state.log)

    async def control(request: Request) -> Response:
        body = await request.json()
        if "issuer_mismatch" in body:
            state.issuer_mismatch = bool(body["issuer_mismatch"])
        if "token_mode" in body:
            state.token_mode = str(body["token_mode"])
        if "expires_in" in body:
            state.expires_in = int(body["expires_in"])
        if body.get("revoke_all"):
            provider.revoke_all()
        if body.get("reset_log"):
            state.log.clear()
        return JSONResponse({"ok": True})

    routes = [
        Route("/.well-known/oauth-authorization-server", metadata, methods=["GET"]),
        Route("/introspect", introspect, methods=["POST"]),
        Route("/_log", show_log, methods=["GET"]),
        Route("/_control", control, methods=["POST"]),
        *sdk_routes,
    ]
    inner = Starlette(routes=routes)

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        """Logs every request (secrets redacted) and applies the token endpoint's misbehaviour."""
        if scope["type"] != "http":
            return await inner(scope, receive, send)
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        path = scope["path"]
        if path not in ("/_log", "/_control"):
            entry: dict[str, Any] = {"method": scope["method"], "path": path}
            query = dict(Request(scope).query_params)
            if query:
                entry["query"] = redact(query)
            ctype = dict(scope["headers"]).get(b"content-type", b"").decode()
            if body and "x-www-form-urlencoded" in ctype:
                from urllib.parse import parse_qsl

                entry["form"] = redact(dict(parse_qsl(body.decode())))
            elif body and "json" in ctype:
                try:
                    entry["json"] = json.loads(body)
                except ValueError:
                    pass
            entry["authorization_header"] = any(k == b"authorization" for k, _ in scope["headers"])
            state.log.append(entry)
        if path == "/token" and state.token_mode != "ok":
            if state.token_mode == "500":
                response: Response = PlainTextResponse("internal error", status_code=500)
            else:
                response = PlainTextResponse("<html>this is not a token</html>", status_code=200)
            return await response(scope, receive, send)
        sent = False

        async def replay():  # type: ignore[no-untyped-def]
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return {"type": "http.disconnect"}

        await inner(scope, replay, send)

    return app  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--expires-in", type=int, default=3600)
    args = parser.parse_args()
    uvicorn.run(build_app(args.port, args.expires_in), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
