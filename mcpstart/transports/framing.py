"""The stdio transport's read buffer: bytes from stdout into newline-delimited frames, as the MCP
specification's stdio transport prescribes (2025-11-25 and 2026-07-28, "Transports: stdio":
messages are delimited by newlines and must not contain embedded newlines); and the write
queue of both transports (``Outbox``)."""

from __future__ import annotations

from collections import deque

from .base import Frame, FrameTooLong

MAX_LINE_BYTES = 256 << 20
"""Longest stdout line mcpstart buffers; a server that writes more without a newline fails."""


class LineBuffer:
    """Collects chunks of a stream and hands out complete lines as Frames (``source`` names
    the stream)."""

    def __init__(self, source: str = "stdout"):
        self.source = source
        self._partial = bytearray()

    def feed(self, chunk: bytes, at_ns: int) -> list[Frame]:
        """The lines ``chunk`` completes, each stamped ``at_ns`` (line ends removed; CRLF
        noted).

        Raises:
            FrameTooLong: more than MAX_LINE_BYTES without a newline (the buffer is
                emptied).
        """
        frames = []
        start = 0
        newline = chunk.find(b"\n")
        while newline != -1:
            if self._partial:
                self._partial += chunk[start:newline]
                raw, self._partial = bytes(self._partial), bytearray()
            else:
                raw = chunk[start:newline]
            crlf = raw.endswith(b"\r")
            frames.append(Frame(raw[:-1] if crlf else raw, at_ns, crlf, self.source))
            start = newline + 1
            newline = chunk.find(b"\n", start)
        self._partial += chunk[start:]
        if len(self._partial) > MAX_LINE_BYTES:
            self._partial = bytearray()
            raise FrameTooLong(f"the server wrote more than {MAX_LINE_BYTES >> 20} MiB on "
                               "stdout without a newline; the stdio transport frames each "
                               "message as one line")
        return frames

    @property
    def pending(self) -> int:
        """How many bytes follow the last newline so far (no copy: a reader may ask after
        every chunk of a long line without its cost growing with the line)."""
        return len(self._partial)

    @property
    def partial(self) -> bytes:
        """A copy of the bytes after the last newline so far (for a diagnosis, not per
        chunk: see ``pending``)."""
        return bytes(self._partial)

    def end(self, at_ns: int) -> list[Frame]:
        """At EOF: an unterminated last line (it still tells what the server wrote), else []."""
        if not self._partial:
            return []
        data, self._partial = bytes(self._partial), bytearray()
        return [Frame(data, at_ns, False)]


class Outbox:
    """Bytes queued for a pipe or a socket, kept as the views they were given: written with
    one gathering call (``os.writev``, ``socket.sendmsg``) and never joined, so a request of
    megabytes goes out from its maker's own bytes without a copy. False when empty."""

    def __init__(self):
        self.views: deque[memoryview] = deque()

    def __bool__(self) -> bool:
        return bool(self.views)

    def append(self, data: bytes | memoryview) -> None:
        if len(data):
            self.views.append(memoryview(data))

    def sent(self, count: int) -> None:
        """Drop the first ``count`` bytes (what the gathering call wrote)."""
        while count:
            first = self.views[0]
            if count < len(first):
                self.views[0] = first[count:]
                return
            count -= len(first)
            self.views.popleft()

    def clear(self) -> None:
        self.views.clear()
