"""What mcpstart asks of a running session and how it reads the answers: ``tools/list``
followed through its pages, a tool call, the result objects and their failures, and the
methods not to ask again."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .. import warnings as warn
from ..transports.jsonrpc import json_bytes
from ..transports.session import NoAnswer, Response, Session, SessionError
from ..wire import REFERENCE_TOOL, ToolCall, paging_stop


NO_TOOL = f"the server lists no {REFERENCE_TOOL} tool; name one with --call TOOL"
"""Why what needs a tool call is not measured (n/a) where the server lists no reference
tool and no --call names another."""


class ProbeError(SessionError):
    """The server answered, but not as the MCP specification or the called tool requires."""


class TooLarge(ProbeError):
    """The server refused the request's body as too large: HTTP 413 Content Too Large
    (RFC 9110, 15.5.14; the Python SDK's server, mcp 2.3.0, answers it over its 4 MiB
    default body limit)."""


class HttpStatusError(ProbeError):
    """The HTTP transport's answer for a request the server answered with an error status
    (4xx or 5xx) and no JSON-RPC answer of its own; ``status`` is that status. In a series
    of calls (warm round trips, full sessions) it is that call's error, counted by its
    class (``error_class``) and warned about; the series goes on."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status

    @property
    def error_class(self) -> str:
        """"http_4xx" or "http_5xx", the load engine's classes (load.ERROR_CLASSES)."""
        return f"http_{self.status // 100}xx"


def chosen_call(call: ToolCall | None, listing: "ToolList") -> ToolCall | None:
    """The call to make: ``call`` (``--call``) when given, else reverse_text where the server
    lists it, else None.

    Raises:
        ProbeError: the named tool is not listed, or its ``inputSchema`` requires arguments
            the call does not give (the cause says where to give them: ``call.origin``).
    """
    if call is None:
        return ToolCall() if listing.find(REFERENCE_TOOL) else None
    tool = listing.find(call.name)
    if tool is None:
        names = ", ".join(str(t.get("name")) for t in listing.tools[:20] if isinstance(t, dict))
        raise ProbeError(f"tools/call {call.name}: the server lists no such tool (it lists: "
                         f"{names or 'none'})")
    schema = tool.get("inputSchema")
    required = schema.get("required") if isinstance(schema, dict) else None
    missing = [k for k in required or [] if isinstance(k, str) and k not in call.arguments]
    if missing:
        raise ProbeError(f"tools/call {call.name}: the tool requires {', '.join(missing)}, "
                         f"which the call does not give; give them in {call.origin}")
    return call


def result_of(response: Response, what: str) -> dict:
    """The ``result`` object of an answer.

    Raises:
        TooLarge: the HTTP transport's answer for a request refused with 413.
        HttpStatusError: its answer for another 4xx or 5xx status without a JSON-RPC answer.
        ProbeError: a JSON-RPC error answer (code and message quoted; an answer the HTTP
            transport made for an exchange that failed, with no code, by its own words) or
            a result that is not an object.
    """
    error = response.message.get("error")
    if error is not None:
        data = error.get("data") if isinstance(error.get("data"), dict) else {}
        if data.get("http_status") == 413:
            raise TooLarge(f"{what}: {error.get('message')}")
        if error.get("code") is None and "http_status" in data:
            status = data["http_status"]
            if isinstance(status, int) and status >= 400:
                raise HttpStatusError(f"{what}: {error.get('message')}", status)
            raise ProbeError(f"{what}: {error.get('message')}")
        raise ProbeError(f"{what} returned JSON-RPC error {error.get('code')}: "
                         f"{error.get('message')}")
    result = response.message.get("result")
    if not isinstance(result, dict):
        raise ProbeError(f"{what} returned a result that is not an object: "
                         f"{json.dumps(result)[:100]}")
    return result


def initialize_result(response: Response) -> dict:
    """The result of an ``initialize`` answer.

    Raises:
        ProbeError: an error answer, or a result without a protocolVersion string.
    """
    result = result_of(response, "initialize")
    if not isinstance(result.get("protocolVersion"), str):
        raise ProbeError("initialize result has no protocolVersion string: "
                         f"{json.dumps(result.get('protocolVersion'))[:100]}")
    return result


@dataclass
class ToolList:
    """The merged answer of ``tools/list`` followed through ``nextCursor``.

    ``list_bytes``: the answers' lines as written; ``definitions_bytes``: the merged tool
    definitions as compact JSON (what a client puts into a prompt); ``at_ns``: arrival of
    the last page; ``answer_ms``: the pages' ``Response.answer_ms``, summed."""

    tools: list
    pages: int
    list_bytes: int
    at_ns: int
    warnings: list[dict]
    answer_ms: float

    @property
    def definitions_bytes(self) -> int:
        return len(json_bytes(self.tools))

    def find(self, name: str) -> dict | None:
        """The listed tool called ``name``, or None."""
        return next((t for t in self.tools if isinstance(t, dict) and t.get("name") == name),
                    None)


def list_tools(session: Session, timeout_s: float, meta: dict | None = None) -> ToolList:
    """``tools/list``, following ``nextCursor`` until it is absent (MCP pagination), stopped
    with a warning naming the cursor by a cursor followed before or past MAX_PAGES pages /
    MAX_TOOLS tools. A tool listed again on a later page (the same name) counts once: the
    first definition is kept, and a warning says how many were listed again.

    Raises:
        SessionError: a page got no usable answer (ProbeError: a wrong one).
    """
    tools, seen, warnings = [], set(), []
    names: set[str] = set()
    again = 0
    pages = size = 0
    answer_ms = 0.0
    cursor = None
    while True:
        params = {"cursor": cursor} if cursor is not None else {}
        if meta:
            params["_meta"] = meta
        response = session.request("tools/list", params, timeout_s)
        result = result_of(response, "tools/list")
        page = result.get("tools")
        if not isinstance(page, list):
            raise ProbeError(f"tools/list result has no tools list: {str(page)[:200]!r}")
        for tool in page:
            name = tool.get("name") if isinstance(tool, dict) else None
            if isinstance(name, str) and name in names:
                again += 1
                continue
            names.add(name)
            tools.append(tool)
        pages, size = pages + 1, size + response.size_bytes
        answer_ms += response.answer_ms
        cursor = result.get("nextCursor")
        if cursor is None:
            break
        stop = paging_stop(cursor, seen, pages, len(tools))
        if stop:
            warnings.append(warn.paging(stop))
            break
        seen.add(cursor)
    if again:
        warnings.append(warn.paging(f"{again} tool(s) listed again on a later page, each "
                                    "counted once (its first definition kept)"))
    return ToolList(tools, pages, size, response.at_ns, warnings, answer_ms)


@dataclass
class CallResult:
    """One ``tools/call``: the joined text content, the result object and the answer."""

    text: str
    result: dict
    response: Response

    @property
    def is_error(self) -> bool:
        return self.result.get("isError") is True


def call_tool(session: Session, call: ToolCall, text: str, timeout_s: float,
              meta: dict | None = None) -> CallResult:
    """Call ``call``'s tool with ``text`` as its payload; a tool-level error (``isError``)
    is returned, not raised.

    Raises:
        SessionError: no usable answer (ProbeError: a JSON-RPC error or no content list).
    """
    params = call.params(text)
    if meta:
        params["_meta"] = meta
    what = f"tools/call {call.name}"
    response = session.request("tools/call", params, timeout_s)
    result = result_of(response, what)
    content = result.get("content")
    if not isinstance(content, list):
        raise ProbeError(f"{what}: the result has no content list: {str(result)[:200]!r}")
    answer = "".join(str(item.get("text", "")) for item in content
                     if isinstance(item, dict) and item.get("type") == "text")
    return CallResult(answer, result, response)


def tool_error(call: ToolCall, outcome: CallResult) -> ProbeError:
    """The failure for a call whose tool said ``isError``, in the server's own words: its
    first line, then (indented) up to 8 more."""
    lines = [line.rstrip() for line in outcome.text[:2000].splitlines() if line.strip()]
    first, rest = (lines[0], lines[1:9]) if lines else ("(no text)", [])
    return ProbeError(f"tools/call {call.name}: the tool reported an error: {first}"
                      + "".join(f"\n  {line}" for line in rest))


@dataclass
class SeriesErrors:
    """The calls of a series (warm round trips, full sessions) that an HTTP error status
    failed: counted by class, the first one's cause kept."""

    by_class: dict[str, int] = field(default_factory=dict)
    first: str | None = None

    def count(self, err: HttpStatusError) -> None:
        self.by_class[err.error_class] = self.by_class.get(err.error_class, 0) + 1
        self.first = self.first or str(err)

    @property
    def total(self) -> int:
        return sum(self.by_class.values())

    def record(self) -> dict:
        """The series block's ``errors``: ``{total, by_class: {http_4xx, http_5xx}}``."""
        return {"total": self.total, "by_class": dict(sorted(self.by_class.items()))}

    def warning(self, series: str, calls: int) -> dict:
        return warn.series_errors(series, self.total, calls, self.first)


@dataclass
class Skips:
    """Methods of one server that failed once and are not asked again in later runs
    (docs/faults.md, family 16): method -> the cause; ``unanswered``: those that got no answer
    at all, which the warm session does not wait for again either."""

    causes: dict[str, str] = field(default_factory=dict)
    unanswered: set[str] = field(default_factory=set)

    def note(self, method: str, error: Exception | str) -> None:
        self.causes.setdefault(method, str(error))
        if isinstance(error, NoAnswer):
            self.unanswered.add(method)

    def __contains__(self, method: str) -> bool:
        return method in self.causes
