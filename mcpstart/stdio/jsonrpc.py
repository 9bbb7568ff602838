"""What a line from a server is, in JSON-RPC 2.0 terms (https://www.jsonrpc.org/specification),
as the MCP stdio transport uses it: a response to the awaited request, a notification, a
request from the server, noise, or an almost-right answer.

The rule for almost-right answers (../shared/fault-cases.md, case 12): while a request is
pending, anything recognisable as its answer ends the wait at once. Deviations a tolerant
client can still use are accepted with a note (``Answer.irregular``): a one- or more-element
batch array (the awaited element is used), a missing or wrong ``jsonrpc`` member, an id of
another JSON type with the same value ("1" or 1.0 for 1). Deviations that leave no usable
answer raise ``MalformedAnswer`` at once: both ``result`` and ``error`` or neither, an
``error`` that is not an object, an answer with id null or without id, a message spread over
several lines, the request itself written back (an echo).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

MAX_JOINED_LINES = 10_000
"""How many following lines mcpstart joins to a line that starts like JSON but does not parse,
to tell a message pretty-printed over several lines from noise."""
MAX_JOINED_BYTES = 16 << 20


class MalformedAnswer(Exception):
    """The server evidently answered the awaited request, but in a form no client can use; the
    message says exactly what was wrong."""


def encode(message: dict) -> bytes:
    """One message as the stdio transport frames it: compact UTF-8 JSON and a bare newline."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def same_id(received, awaited) -> str | None:
    """How ``received`` matches ``awaited`` (an int or str id mcpstart sent): "exact", "loose"
    (same value, another JSON type: "1" or 1.0 for 1), or None (no match; booleans never
    match numbers)."""
    if isinstance(received, bool) or isinstance(awaited, bool):
        return None
    if type(received) is type(awaited) and received == awaited:
        return "exact"
    if isinstance(received, (int, float, str)):
        try:
            if str(received) == str(awaited) or float(received) == float(awaited):
                return "loose"
        except ValueError:
            return None
    return None


@dataclass
class Answer:
    """The awaited response, as accepted. ``message`` is the response object (the batch
    element when it came in a batch); ``irregular`` lists what was wrong but tolerated."""

    message: dict
    irregular: list[str] = field(default_factory=list)


@dataclass
class Parsed:
    """Everything one stdout line held. ``answer`` is the awaited response if the line held
    it; ``requests`` are server-to-client requests to answer; ``notifications`` their
    methods; ``noise`` is True for a line that is not JSON-RPC; ``stray`` lists responses to
    no pending request; ``notes`` are irregularities of messages that are not the answer."""

    answer: Answer | None = None
    requests: list[dict] = field(default_factory=list)
    notifications: list[str] = field(default_factory=list)
    stray: list[dict] = field(default_factory=list)
    noise: bool = False
    notes: list[str] = field(default_factory=list)


def _answer(message: dict, what: str, match: str, batch: bool) -> Answer:
    irregular = []
    if batch:
        irregular.append("answered in a JSON-RPC batch array (MCP allows no batches since "
                         "2025-06-18)")
    if message.get("jsonrpc") != "2.0":
        member = ("no \"jsonrpc\" member" if "jsonrpc" not in message
                  else f"\"jsonrpc\": {json.dumps(message['jsonrpc'])}")
        irregular.append(f"answered with {member} (JSON-RPC 2.0 requires \"jsonrpc\": \"2.0\")")
    if match == "loose":
        irregular.append(f"answered with id {json.dumps(message.get('id'))}, another JSON type "
                         "than the id sent (accepted: same value)")
    has_result, has_error = "result" in message, "error" in message
    if has_result and has_error:
        raise MalformedAnswer(f"{what}: the answer has both \"result\" and \"error\"; "
                              "JSON-RPC 2.0 allows exactly one")
    if not has_result and not has_error:
        raise MalformedAnswer(f"{what}: the answer has neither \"result\" nor \"error\": "
                              f"{repr(clip(message))}")
    if has_error and not isinstance(message["error"], dict):
        raise MalformedAnswer(f"{what}: the answer's \"error\" is not an object: "
                              f"{repr(clip(message['error']))}")
    return Answer(message, irregular)


def classify(value, awaited_id, what: str, parsed: Parsed | None = None,
             batch: bool = False) -> Parsed:
    """Sort one parsed JSON value into a ``Parsed``.

    Args:
        value: what ``json.loads`` made of the line.
        awaited_id: the id of the pending request, or None when nothing is awaited.
        what: the pending request, as causes name it ("tools/list", "tools/call reverse_text").

    Raises:
        MalformedAnswer: an answer to the pending request that cannot be used.
    """
    parsed = parsed or Parsed()
    if isinstance(value, list) and value and not batch:
        for element in value:
            classify(element, awaited_id, what, parsed, batch=True)
        return parsed
    if not isinstance(value, dict) or not ("method" in value or "result" in value
                                           or "error" in value or "id" in value):
        parsed.noise = True
        return parsed
    if "method" in value:
        if (awaited_id is not None and same_id(value.get("id"), awaited_id) == "exact"
                and value["method"] == what.split(" ")[0]):
            raise MalformedAnswer(f"{what}: the server wrote the request itself back on stdout "
                                  "(an echo of stdin, not an answer)")
        if value.get("id") is not None:
            parsed.requests.append(value)
        else:
            parsed.notifications.append(str(value["method"]))
        if value.get("jsonrpc") != "2.0":
            parsed.notes.append(f"a {'request' if 'id' in value else 'notification'} "
                                "without \"jsonrpc\": \"2.0\"")
        return parsed
    if awaited_id is None:
        parsed.stray.append(value)
        return parsed
    if "id" not in value or value["id"] is None:
        error = value.get("error")
        said = (f"error {error.get('code')}: {error.get('message')}" if isinstance(error, dict)
                else repr(clip(value)))
        raise MalformedAnswer(
            f"{what}: the server answered with {'id null' if 'id' in value else 'no id'} "
            f"({said}); it could not read or match the request")
    match = same_id(value["id"], awaited_id)
    if match is None:
        parsed.stray.append(value)
        return parsed
    parsed.answer = _answer(value, what, match, batch)
    return parsed


def looks_like_json_start(text: bytes) -> bool:
    """True for a line that may open a JSON value written over several lines."""
    return text[:1] in (b"{", b"[")


def clip(value, limit: int = 200) -> str:
    """The first ``limit`` characters of what a server sent: bytes decoded leniently, a
    string as it is, any other JSON value as its JSON text."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text[:limit]
