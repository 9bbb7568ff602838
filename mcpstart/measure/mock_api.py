"""The mock API a workload's tools call (``{mock_api}`` in their arguments, workload.py): a
loopback HTTP server in a thread of mcpstart (the standard library's ThreadingHTTPServer),
answering every GET with a small JSON body after ``settings.mock_api_latency_ms``, as the
Streamable HTTP benchmark's ``fetch_external_data`` tool calls a local mock API. Started only
for a workload that needs it, stopped when the run ends."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .settings import Settings


@contextmanager
def serving(latency_ms: float) -> Iterator[str]:
    """The mock API on 127.0.0.1 at a free port while the block runs; yields its base URL
    ``http://127.0.0.1:PORT``. Each GET is answered 200 with ``{"path", "items"}`` (JSON,
    about 100 bytes) after ``latency_ms``; any other method 405."""
    wait_s = latency_ms / 1000

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # kept-alive connections, as a client's pool expects
        disable_nagle_algorithm = True
        """TCP_NODELAY (socketserver.StreamRequestHandler): the headers and the body go out as
        two writes, and Nagle's algorithm would hold the second until the client's delayed
        ACK of the first, about 40 ms on Linux: every fetch would read 40 ms slower."""

        def do_GET(self):  # noqa: N802 (http.server's name)
            time.sleep(wait_s)
            body = json.dumps({"path": self.path, "items": [
                {"id": i, "name": f"item-{i}", "value": i * 10} for i in range(3)]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args):  # nothing on mcpstart's stderr
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="mock-api", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def for_workload(settings: Settings) -> Iterator[Settings]:
    """``settings`` with the workload's ``{mock_api}`` replaced by the mock API's URL (and the
    first call, ``settings.call``, with it), the mock API serving while the block runs; the
    same settings, nothing started, when no argument needs it."""
    workload = settings.workload
    if workload is None or not workload.needs_mock_api:
        yield settings
        return
    with serving(settings.mock_api_latency_ms) as url:
        resolved = workload.with_mock_api(url)
        yield replace(settings, workload=resolved, call=resolved.calls[0])
