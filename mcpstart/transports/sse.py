"""Server-Sent Events framing: the events of a ``text/event-stream`` body, as they arrive.

The rules are the WHATWG HTML standard's, section 9.2.6 "Interpreting an event stream": a
line ends with CRLF, LF or CR; a blank line dispatches the event; ``data:`` lines are
joined with LF; a line starting with ``:`` is a comment; ``event:``, ``id:`` and ``retry:``
set their fields; an event whose data buffer is empty is not dispatched (the priming event
the MCP specification 2025-11-25 asks servers to send, an id and an empty ``data`` field,
gives none); an unterminated event at the end of the stream is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass


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
        which may begin with the LF of the same CRLF). Each byte is scanned once, by
        ``bytes.find`` (memchr), so a 10 MiB event in 64 KiB chunks costs what its length
        does."""
        rest = self._rest
        rest += chunk
        events: list[Event] = []
        start, at = 0, self._scanned
        while True:
            lf = rest.find(b"\n", at)
            cr = rest.find(b"\r", at, len(rest) if lf < 0 else lf)
            if cr >= 0:
                if cr + 1 == len(rest):
                    break  # maybe half of a CRLF
                end, after = cr, cr + 2 if rest[cr + 1] == 0x0A else cr + 1
            elif lf >= 0:
                end, after = lf, lf + 1
            else:
                break
            event = self._line(bytes(rest[start:end]))
            if event is not None:
                events.append(event)
            start = at = after
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

    @property
    def unfinished(self) -> bytes:
        """The data of the event not yet dispatched, a data line still arriving included
        (its field name removed), joined with LF; b"" when none."""
        rest = bytes(self._rest)
        parts = self._data + ([rest[5:].removeprefix(b" ")] if rest.startswith(b"data:") else [])
        return b"\n".join(parts)

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
