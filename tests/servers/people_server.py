"""people: a downstream MCP server holding personal data, for the e2e tests of PII tokenisation.

Run with `python people_server.py` (stdio). Built on the official MCP Python SDK (`MCPServer`).

- `list_people()`: `{people: [...]}`, the records below (emails, valid-Luhn card numbers, phone numbers, IBANs with
  valid checksums, US SSNs, IP addresses).
- `remember(**args)`: appends exactly the arguments it received, as one JSON line, to the file
  named by `PEOPLE_RECEIVED` (so a test can check which values arrived), and answers `stored`.
- `echo(value)`: returns what it received.
- `fail_for(person)`: fails with an error message that holds the person's email and card.
- `statement(person)`: the person's statement as a binary resource block whose URI, `_meta` and
  annotations name their email (a block an LLM's code may pass on unchanged).
- resource `people://person/{email}` and prompt `write_to(email)`: each records the email it
  received, like `remember`, and answers with it.
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import Annotations, BlobResourceContents, EmbeddedResource

warnings.simplefilter("ignore")

PEOPLE = [
    {
        "name": "Alice Smith",
        "email": "alice.smith@example.com",
        "card": "4111 1111 1111 1111",
        "phone": "+44 20 7946 0958",
        "iban": "DE89 3704 0044 0532 0130 00",
        "ssn": "536-82-4197",
        "ip": "203.0.113.7",
    },
    {
        "name": "Bob Jones",
        "email": "bob.jones@example.org",
        "card": "5555-5555-5555-4444",
        "phone": "+1 650-253-0000",
        "iban": "GB82 WEST 1234 5698 7654 32",
        "ssn": "234-56-7890",
        "ip": "198.51.100.23",
    },
]

# Every personal value in the records: none may reach a client that tokenises.
VALUES = [v for person in PEOPLE for k, v in person.items() if k != "name"]

mcp = MCPServer("people")


@mcp.tool()
def list_people() -> dict[str, list[dict[str, str]]]:
    """The people on file, with their contact and payment details."""
    return {"people": PEOPLE}


def record(received: dict[str, Any]) -> None:
    """Appends what a call received to the file named by `PEOPLE_RECEIVED`."""
    path = os.environ.get("PEOPLE_RECEIVED")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(received) + "\n")


@mcp.tool()
def remember(note: str, details: dict[str, Any] | None = None) -> str:
    """Stores a note (and details) about a person."""
    record({"note": note, "details": details})
    return "stored"


@mcp.resource("people://person/{email}", mime_type="text/plain")
def person(email: str) -> str:
    """One person's file, by email."""
    record({"resource": email})
    return f"file of {email}"


@mcp.prompt()
def write_to(email: str) -> str:
    """A prompt to write to a person."""
    record({"prompt": email})
    return f"Write a note to {email}."


@mcp.tool()
def echo(value: Any) -> Any:
    """Returns its argument."""
    return value


@mcp.tool()
def fail_for(person: int) -> str:
    """Fails, naming the person's email and card."""
    p = PEOPLE[person]
    raise ToolError(f"payment declined for {p['email']} with card {p['card']}")


@mcp.tool()
def statement(person: int) -> list[EmbeddedResource]:
    """The person's statement (a PDF), as a resource block."""
    email = PEOPLE[person]["email"]
    contents = BlobResourceContents(
        uri=f"crm://customers/{email}/statement.pdf", blob="JVBERi0xLjQK", mime_type="application/pdf"
    )
    block = EmbeddedResource(type="resource", resource=contents, annotations=Annotations(audience=["user"], priority=0.5))
    block.meta = {"owner": email}
    return [block]


if __name__ == "__main__":
    mcp.run()
