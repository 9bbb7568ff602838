"""What a line from a server is, in JSON-RPC 2.0 terms (https://www.jsonrpc.org/specification),
as the MCP stdio transport uses it: a response to the awaited request, a notification, a
request from the server, noise, or an almost-right answer.

The rule for almost-right answers (docs/faults.md, family 12): while a request is
pending, anything recognisable as its answer ends the wait at once. Deviations a tolerant
client can still use are accepted with a note (``Answer.irregular``): a one- or more-element
batch array (the awaited element is used), a missing or wrong ``jsonrpc`` member, an id of
another JSON type with the same value ("1" or 1.0 for 1). Deviations that leave no usable
answer raise ``MalformedAnswer`` at once: both ``result`` and ``error`` or neither, an
``error`` that is not an object, an answer with id null or without id, or with an id mcpstart
never sent, a message spread over several lines, the request itself written back (an echo).

What a line's bytes are (``decode``): mcpstart reads more leniently than the official SDKs, so
that it recognises an answer a strict client would drop. What each SDK's client does with each
deviation is clients.DEVIATIONS (verified against the clients): where no client gets the
message (a byte order mark on a stdio line, bytes before the message, a raw control character
in a string), the answer fails at once saying so; where the clients disagree (NaN, invalid
UTF-8, a lone surrogate escape, a very long integer, nesting past 201 levels), it is measured
as a client that reads it does, with a warning naming which clients refuse it; where all read it (a duplicate key), it
is accepted with a note.
"""

from __future__ import annotations

import json
import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from . import clients

MAX_JOINED_LINES = 10_000
"""How many following lines mcpstart joins to a line that starts like JSON but does not parse,
to tell a message pretty-printed over several lines from noise."""
MAX_JOINED_BYTES = 16 << 20
MAX_INT_DIGITS = 4000
"""Longer integers are read as floats: Python's int() refuses more than 4300 digits."""
UTF8_BOM = b"\xef\xbb\xbf"
_ID = re.compile(rb'"id"\s*:\s*(-?\d+(?:\.\d+)?|"(?:[^"\\]|\\.)*"|true|false|null)')
_MEMBER = re.compile(rb'"(?:result|error|jsonrpc)"\s*:')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b'[]{}"')


@dataclass
class Decoded:
    """What one line's bytes are. ``value``: the JSON value (None when the line is none);
    ``notes``: deviations every client reads; ``split``: deviations some clients refuse and
    others read (each with what every client does); ``strict``: why no client gets the message
    although mcpstart read it; ``error``: why it is no JSON at all; ``invalid_utf8``: the
    deviation's text when the bytes hold invalid UTF-8 (where the first invalid bytes are, in
    hex, and what each client does), else None."""

    value: object = None
    notes: list[str] = field(default_factory=list)
    split: list[str] = field(default_factory=list)
    strict: str | None = None
    error: str | None = None
    invalid_utf8: str | None = None


def _loads(text: str, seen: dict, strict: bool = True):
    def constant(name: str) -> float:
        seen.setdefault("nan" if name == "NaN" else "infinity", name)
        return float(name.replace("Infinity", "inf"))

    def pairs(items: list) -> dict:
        if len({k for k, _ in items}) < len(items):
            seen.setdefault("duplicate_key", None)
        return dict(items)

    def integer(digits: str):
        if len(digits.lstrip("-")) > clients.PYTHON_INT_DIGITS:
            seen.setdefault("long_integer", f"{len(digits.lstrip('-'))} digits")
        return int(digits) if len(digits) <= MAX_INT_DIGITS else float(digits)

    return json.loads(text, strict=strict, parse_constant=constant, object_pairs_hook=pairs,
                      parse_int=integer)


def _lone_surrogate(data: bytes, value) -> bool:
    """True when ``value`` holds a string with a lone UTF-16 surrogate (only looked for when
    the bytes hold a surrogate escape)."""
    if b"\\ud" not in data and b"\\uD" not in data:
        return False
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return True
    return False


def _deeper(data: bytes, limit: int) -> bool:
    """True when the JSON text ``data`` nests arrays and objects more than ``limit`` deep
    (looked for only when it opens more than ``limit``): its brackets outside strings, with the
    innermost empty pairs removed once per level."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    kept = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_BRACKETS)
    brackets = b"".join(kept.split(b'"')[::2])  # outside strings
    for _ in range(limit):
        if not brackets:
            return False
        brackets = brackets.replace(b"[]", b"-").replace(b"{}", b"-").translate(None, b"-")
    return bool(brackets)


def decode(data: bytes, carrier: str = "line") -> Decoded:
    """Read one message's bytes (a stdio line without its end and surrounding whitespace, an
    HTTP body or an event's data: ``carrier``, as clients.CARRIERS) as JSON, as leniently as
    the answer can still be recognised (module doc). Never raises."""
    out, seen = Decoded(), {}
    if data.startswith(UTF8_BOM):
        data, seen["bom"] = data[3:], None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        text = data.decode("utf-8", "replace")
        at = err.start + (3 if "bom" in seen else 0)
        seen["invalid_utf8"] = f"at byte {at} of the message: {data[err.start:err.end].hex(' ')}"
    try:
        try:
            out.value = _loads(text, seen)
        except ValueError as err:
            if "control character" not in str(err):
                raise
            out.value = _loads(text, seen, strict=False)
            seen.setdefault("control_character", None)
    except RecursionError:
        out.error = "it is nested deeper than mcpstart's JSON parser (Python's json) reads"
        return out
    except ValueError as err:
        start = text.find("{")
        out.error = f"not valid JSON: {err}"
        if start <= 0:
            return out
        try:
            value = _loads(text[start:], seen)
        except (ValueError, RecursionError):
            return out
        if not _is_message(value):
            return out
        out.value, out.error = value, None
        seen["bytes_before"] = f"{start} character(s): {text[:min(start, 20)]!r}"
    if _lone_surrogate(data, out.value):
        seen["lone_surrogate"] = None
    if _deeper(data, clients.PYTHON_MAX_DEPTH):
        seen["deep_nesting"] = None
    for name, detail in seen.items():
        said = (clients.DEVIATIONS[name].what + (f" [{detail}]" if detail else "")
                + f"; {clients.verdicts(name, carrier)}")
        if name == "invalid_utf8":
            out.invalid_utf8 = said
        if clients.refused_by_all(name, carrier):
            out.strict = out.strict or said
        elif clients.split(name, carrier):
            out.split.append(said)
        else:
            out.notes.append(f"a message that {said}")
    return out


def _is_message(value) -> bool:
    """A JSON object shaped like a JSON-RPC message (not a fragment of one)."""
    return isinstance(value, dict) and ("jsonrpc" in value or "method" in value or (
        "id" in value and ("result" in value or "error" in value)))


def names_id(data: bytes, awaited_id) -> bool:
    """True when a line that is not valid JSON still reads as a one-line message for the
    awaited request: its ``"id"`` is the awaited id and it has a result, error or jsonrpc
    member (a message cut off or broken, not the first line of a pretty-printed one)."""
    match = _ID.search(data)
    if match is None or not _MEMBER.search(data):
        return False
    try:
        return same_id(json.loads(match.group(1)), awaited_id) is not None
    except ValueError:
        return False


def unterminated(partial: bytes) -> list:
    """The JSON values an unterminated last line holds, one after another: messages a server
    ended with CR alone, or with nothing at all."""
    text = partial.decode("utf-8", "replace")
    values, at, decoder = [], 0, json.JSONDecoder()
    while (start := min((i for i in (text.find("{", at), text.find("[", at)) if i >= 0),
                        default=-1)) >= 0:
        try:
            value, at = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            break
        values.append(value)
    return values


class MalformedAnswer(Exception):
    """The server evidently answered the awaited request, but in a form no client can use; the
    message says exactly what was wrong."""


def encode(message: dict) -> bytes:
    """One message as the stdio transport frames it: compact UTF-8 JSON (``json_bytes``) and
    a bare newline."""
    return json_bytes(message) + b"\n"


def json_bytes(value) -> bytes:
    """``value`` as compact UTF-8 JSON; a string holding a lone surrogate (a server's, echoed
    back) is written as its escape, as JSON.stringify does, since UTF-8 cannot hold it."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":")).encode()


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
    it; ``requests`` are server-to-client requests to answer; ``notifications`` the
    notifications; ``noise`` is True for a line that is not JSON-RPC; ``stray`` lists
    responses to no pending request; ``notes`` are irregularities of messages that are not
    the answer."""

    answer: Answer | None = None
    requests: list[dict] = field(default_factory=list)
    notifications: list[dict] = field(default_factory=list)
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
             batch: bool = False, sent: AbstractSet = frozenset(),
             notified: AbstractSet[str] = frozenset()) -> Parsed:
    """Sort one parsed JSON value into a ``Parsed``.

    Args:
        value: what ``json.loads`` made of the line.
        awaited_id: the id of the pending request, or None when nothing is awaited.
        what: the pending request, as causes name it ("tools/list", "tools/call reverse_text").
        sent: the ids of the requests mcpstart sent (read, never changed): an answer with
            one of them but the awaited one is a stray (a duplicate); one with an id never
            sent fails.
        notified: the methods of the notifications mcpstart sent: an error with id null
            whose message names one of them, and not the pending request's method, answers
            that notification (which needs no answer) and is noted, not taken as the answer.

    Raises:
        MalformedAnswer: an answer to the pending request that cannot be used.
    """
    parsed = parsed or Parsed()
    if isinstance(value, list) and value and not batch:
        for element in value:
            classify(element, awaited_id, what, parsed, batch=True, sent=sent,
                     notified=notified)
        return parsed
    if not isinstance(value, dict) or MEMBERS.isdisjoint(value):
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
            parsed.notifications.append(value)
        if value.get("jsonrpc") != "2.0":
            parsed.notes.append(f"a {'request' if 'id' in value else 'notification'} "
                                "without \"jsonrpc\": \"2.0\"")
        return parsed
    if awaited_id is None:
        parsed.stray.append(value)
        return parsed
    if "id" not in value or value["id"] is None:
        error = value.get("error")
        said = json.dumps(error) if isinstance(error, dict) else ""
        named = sorted(m for m in notified if m in said)
        if "id" in value and named and what.split(" ")[0] not in said:
            parsed.notes.append(f"an error with id null answering {named[0]}, a notification "
                                f"(which gets no answer; not taken as the answer to "
                                f"{what.split(' ')[0]})")
            return parsed
        said = (f"error {error.get('code')}: {error.get('message')}" if isinstance(error, dict)
                else repr(clip(value)))
        raise MalformedAnswer(
            f"{what}: the server answered with {'id null' if 'id' in value else 'no id'} "
            f"({said}); it could not read or match the request")
    match = same_id(value["id"], awaited_id)
    if match is None and any(same_id(value["id"], earlier) for earlier in sent):
        parsed.stray.append(value)  # an earlier request answered again
        return parsed
    if match is None:
        raise MalformedAnswer(
            f"{what}: the server answered with id {clip(value['id'], 40)}, an id mcpstart never "
            f"sent (the pending request is id {json.dumps(awaited_id)}); no client can match "
            "the answer to its request")
    parsed.answer = _answer(value, what, match, batch)
    return parsed


def is_message(value) -> bool:
    """Whether a JSON value is a JSON-RPC message or a batch holding one: an object with
    any of ``method``, ``result``, ``error`` or ``id`` (what ``classify`` does not count as
    noise)."""
    if isinstance(value, list):
        return any(is_message(element) for element in value if not isinstance(element, list))
    return isinstance(value, dict) and not MEMBERS.isdisjoint(value)


MEMBERS = frozenset(("method", "result", "error", "id"))


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
