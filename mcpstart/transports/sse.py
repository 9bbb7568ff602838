"""Server-Sent Events framing: the events of a ``text/event-stream`` body, as they arrive.

The rules are the WHATWG HTML standard's, section 9.2.6 "Interpreting an event stream": a
line ends with CRLF, LF or CR; a blank line dispatches the event; ``data:`` lines are
joined with LF; a line starting with ``:`` is a comment; ``event:``, ``id:`` and ``retry:``
set their fields; an event whose data buffer is empty is not dispatched (the priming event
the MCP specification 2025-11-25 asks servers to send, an id and an empty ``data`` field,
gives none); an unterminated event at the end of the stream is dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE_END = re.compile(rb"\r\n|\r|\n")


@dataclass
class Event:
    """One dispatched event: ``data`` (its data lines joined with LF, UTF-8 bytes as sent),
    ``event`` (its type; "message" when unnamed) and ``id`` (the last event id, or None)."""

    data: bytes
    event: str = "message"
    id: str | None = None


class EventStream:
    """An incremental parser: ``feed(chunk)`` returns the events the chunk completed.

    Attributes:
        last_id: the last event id set (None before any).
        retry_ms: the last valid ``retry:`` value (reconnection time, ms), or None.
        comments: how many comment lines (keep-alives) were seen.
    """

    def __init__(self) -> None:
        self._rest = bytearray()
        self._scanned = 0
        self._data: list[bytes] = []
        self._event = b""
        self.last_id: str | None = None
        self.retry_ms: int | None = None
        self.comments = 0
        self.ended = 0
        """Events ended that had a data field, dispatched or not (an empty one, e.g. a
        priming event, is not)."""

    def feed(self, chunk: bytes) -> list[Event]:
        """The events ``chunk`` completed (a CR at its very end waits for the next chunk,
        which may begin with the LF of the same CRLF). Each byte is scanned once, so a
        10 MiB event in 64 KiB chunks costs what its length does."""
        rest = self._rest
        rest += chunk
        events: list[Event] = []
        start = 0
        for match in _LINE_END.finditer(rest, self._scanned):
            if match.group() == b"\r" and match.end() == len(rest):
                break  # maybe half of a CRLF
            event = self._line(bytes(rest[start:match.start()]))
            if event is not None:
                events.append(event)
            start = match.end()
        del rest[:start]
        self._scanned = len(rest) - (1 if rest.endswith(b"\r") else 0)
        return events

    def end(self) -> list[Event]:
        """At the end of the stream: a CR held back (it might have been half of a CRLF) ends
        its line, and the event that completes is returned; anything after it is dropped
        (an unterminated event is not dispatched)."""
        events = self.feed(b"\n") if self._rest.endswith(b"\r") else []
        self._rest.clear()
        self._scanned = 0
        return events

    @property
    def pending_bytes(self) -> int:
        """How many bytes of a line not yet ended are held."""
        return len(self._rest)

    def _line(self, line: bytes) -> Event | None:
        if not line:
            return self._dispatch()
        if line.startswith(b":"):
            self.comments += 1
            return None
        name, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value
        elif name == b"id" and b"\0" not in value:
            self.last_id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _dispatch(self) -> Event | None:
        data, event = b"\n".join(self._data), self._event
        had_data = bool(self._data)
        self._data, self._event = [], b""
        self.ended += had_data
        if not had_data or not data:
            return None
        return Event(data, event.decode("utf-8", "replace") or "message", self.last_id)
