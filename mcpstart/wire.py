"""What mcpstart writes to a server, as the MCP specification words it: the requests that open
a session in each era (``initialize``; the 2026-07-28 ``_meta`` envelope), the tool call and its
payload, and the paging rule for ``tools/list``. A leaf: it imports nothing of mcpstart but its
version, so every layer can use it."""

from __future__ import annotations

import json
import string
from dataclasses import dataclass, field

from . import __version__

REFERENCE_TOOL = "reverse_text"
MODERN_REVISION = "2026-07-28"
"""The first revision of the modern era: no initialize handshake; every request carries
``params._meta`` (MCP specification 2026-07-28, basic/index and server/discover)."""
META = "io.modelcontextprotocol/"
PAYLOAD_MARK = "{payload}"
MAX_PAGES = 100
MAX_TOOLS = 10_000
UNICODE_CHECK = "mcp e\u0301t\u00e9 \U0001F600 \u6f22\u5b57!"
"""A short input with a combining mark (e + U+0301), a non-BMP emoji and CJK; its expected
reversal is by code points: Python's ``s[::-1]``."""


def revision(value: str) -> str:
    """A protocol revision to ask for: any non-blank string (a server answers what it
    speaks). Raises ValueError for a blank one."""
    if not value.strip():
        raise ValueError("is empty")
    return value


def client_info() -> dict:
    """``{name, version}`` mcpstart gives as its clientInfo."""
    return {"name": "mcpstart", "version": __version__}


def initialize_request(revision: str) -> dict:
    """The ``initialize`` request (id 1) that opens a handshake-era session."""
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": revision, "capabilities": {}, "clientInfo": client_info()}}


def modern_meta(revision: str = MODERN_REVISION) -> dict:
    """The ``params._meta`` every modern-era request carries (2026-07-28, basic/index)."""
    return {f"{META}protocolVersion": revision, f"{META}clientInfo": client_info(),
            f"{META}clientCapabilities": {}}


def modern_request(method: str, params: dict | None = None,
                   revision: str = MODERN_REVISION) -> dict:
    """A modern-era request (id 1) with the ``_meta`` envelope."""
    return {"jsonrpc": "2.0", "id": 1, "method": method,
            "params": {**(params or {}), "_meta": modern_meta(revision)}}


def payload_text(size: int) -> str:
    """``size`` ASCII characters with no symmetry, so a wrong reversal cannot pass."""
    alphabet = string.ascii_letters + string.digits
    return (alphabet * (size // len(alphabet) + 1))[:size]


SMALL_TEXT = payload_text(16)
"""The text of the first tool call of a cold start, of the modern-era first call and of the
warm round trips: made once, not inside a timed phase."""


def fill(value, mark: str, text: str):
    """``value`` (any JSON value) with ``mark`` replaced by ``text`` in every string in it."""
    if isinstance(value, str):
        return value.replace(mark, text)
    if isinstance(value, list):
        return [fill(v, mark, text) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, mark, text) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class ToolCall:
    """The tool mcpstart calls: ``name`` and its ``arguments`` (a JSON object whose values may
    be of any JSON type), in which every string value equal to or containing ``{payload}``
    gets the payload text; ``origin`` names where the arguments are given, in causes
    ("--args", or a workload file's table)."""

    name: str = REFERENCE_TOOL
    arguments: dict = field(default_factory=lambda: {"text": PAYLOAD_MARK})
    origin: str = field(default="--args", compare=False)

    def params(self, text: str) -> dict:
        """``tools/call`` params with ``text`` put where ``{payload}`` stands."""
        return {"name": self.name, "arguments": fill(self.arguments, PAYLOAD_MARK, text)}

    @property
    def carries_payload(self) -> bool:
        """True when a string value of the arguments holds ``{payload}``: the call can be
        made large."""
        return self.params("") != self.params(PAYLOAD_MARK * 2)

    @classmethod
    def parse(cls, name: str | None, args: str | None) -> "ToolCall | None":
        """``--call NAME --args JSON`` as a ToolCall; None without a name (the default call).
        ``--call NAME`` alone sends ``{"text": "{payload}"}``; ``--args '{}'`` sends no
        arguments; any JSON values are sent as they are (``{"n": 30}``).

        Raises:
            ValueError: args without a name, or JSON that is not an object (tools/call
                arguments are an object: MCP specification, server/tools, "Calling Tools").
        """
        if args is not None and name is None:
            raise ValueError("--args needs --call TOOL (--call reverse_text for the default "
                             "tool)")
        if name is None:
            return None
        if args is None:
            return cls(name)
        try:
            arguments = json.loads(args)
        except ValueError as err:
            raise ValueError(f"--args: not JSON: {err}") from err
        if not isinstance(arguments, dict):
            raise ValueError("--args: must be a JSON object (tools/call arguments are one)")
        return cls(name, arguments)

    @property
    def verifiable(self) -> bool:
        """True when the answer can be checked: reverse_text with the reference arguments."""
        return self.name == REFERENCE_TOOL and self.arguments == {"text": PAYLOAD_MARK}


def paging_stop(cursor: object, seen: set[str], pages: int, tools: int) -> str | None:
    """Why ``tools/list`` paging stops at a ``nextCursor`` that is present, after ``pages``
    pages holding ``tools`` tools and the cursors ``seen`` already followed; None: follow it.
    Guards against a cursor that is not a string, one that never advances, and more than
    MAX_PAGES pages / MAX_TOOLS tools."""
    if not isinstance(cursor, str):
        return f"nextCursor {json.dumps(cursor)[:60]} is not a string"
    if cursor in seen:
        return f"nextCursor {cursor[:60]!r} repeated a cursor already followed"
    if pages >= MAX_PAGES or tools >= MAX_TOOLS:
        return (f"nextCursor {cursor[:60]!r} not followed: {pages} pages / {tools} tools "
                f"reached (limits {MAX_PAGES} / {MAX_TOOLS})")
    return None
