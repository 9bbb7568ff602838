"""The load engine's side of mcpstart's load runs: a locustfile, run by Locust only
(``python -m locust -f locust_mcp.py``, load.py starts it), never imported by mcpstart or
its tests: Locust patches the process that imports it (gevent's monkey patching).

Its configuration is the JSON text of the option ``--mcpstart-config`` (by default the file
``MCPSTART_LOAD`` names; a master forwards it to its workers with the spawn message, so a
worker on another machine gets it too), read at test_start: ``{host, port, path, headers,
scenario, users, workers, duration_s, timeout_s, rate, rate_per_user, output, call,
reversed}``:
``call`` the tools/call params, ``reversed`` whether the answer is checked as the reversal of
``call.arguments.text`` (reverse_text), else that the tool reported no error; with a workload
(load._workload) ``calls`` ``[{params, weight}]``, each call drawn among them by weight and
named ``tools/call NAME``, and ``think_s``, the pause after each iteration of the unpaced
scenarios ("session", "calls"). Scenarios:
- "session": a full session per iteration, as the k6 benchmark runs it: POST initialize,
  POST notifications/initialized, POST tools/call, DELETE;
- "calls": tools/call on one persistent session per user, one in flight per user;
- "rate": the closed loop at a fixed rate: the same calls paced at ``rate_per_user`` per
  user (Locust's ``constant_throughput`` wait: a late answer delays that user's next call,
  so a stall delays the requests behind it instead of timing them);
- "open": the open loop at a fixed rate: ``rate`` requests/s in all on one schedule
  (arrivals.slots), each user starting its share of the calls at their intended times in
  greenlets of its own whatever the answers (arrivals.open_loop), each on an idle kept-alive
  connection of the user's or a new one, all on the user's session; a call's time runs from
  its intended send time (its ``start`` too), so a stall shows in every call scheduled
  behind it.

Every request is bounded by ``timeout_s`` as a whole (gevent.Timeout: a stall or a trickle
counts as a timeout error) and recorded unrounded (perf_counter) with its error class
(timeout, http_4xx, http_5xx, connection, protocol) and fired as a Locust request event,
so Locust's own histogram holds it too. Users start together once all are spawned; the
window ends ``duration_s`` later: no request starts after it, those in flight finish (or
time out) and are counted; then the runner quits. ``output`` gets the records.

Distributed (``workers`` in all, load_workers.py): the master runs no user; each worker's
window starts at the master's spawning_complete message, its users take their share of the
open loop's schedule (load_workers.share), and once its window is over and nothing is in
flight it sends its records to the master (load_workers.MESSAGE) and its CPU seconds over the
window; the master quits once every worker's have come (at most timeout_s + RECORDS_WAIT_S
after the window) and writes them, as ``workers``, to ``output``.
"""

import itertools
import json
import os
import random
import socket
import time

import gevent
import gevent.pool
import geventhttpclient.client
from geventhttpclient import HTTPClient
from geventhttpclient.response import HTTPConnectionClosed
from locust import User, constant, constant_throughput, events, task
from locust.exception import StopUser
from locust.runners import MasterRunner, WorkerRunner

from mcpstart.measure import arrivals, load_workers
from mcpstart.transports.sse import EventStream

geventhttpclient.client._may_retry_after_send_error = lambda _method: False
"""geventhttpclient resends an idempotent request (a DELETE) on a new connection when the
server closed the one it went out on: that retry would be a request no one counts, and the
close an error no one sees. Every request is sent once; a close is its ``connection``
error."""

CONFIG: dict = {}
"""The configuration (module doc), set at test_start."""
RECORDS_WAIT_S = 5.0
"""How long past a worker's own bound the master waits for its records."""
META = "io.modelcontextprotocol/"
RECORDS: list = []
"""[name, start (time.time), ms, class or None, detail or None] per finished request."""
IN_FLIGHT: dict = {}
WINDOW: dict = {"start": None, "deadline": None}
CPU: dict = {}
"""This process's CPU seconds at its window's start (``start``)."""
WORKERS: list = []
"""The master's: each worker's records (load_workers.MESSAGE's data)."""
ENVIRONMENT: dict = {}
INDEX = itertools.count()
"""Each user's place in the open loop's schedule."""
SCHEDULING: set = set()
"""The open loop's users with slots not yet begun: the runner waits for them too."""


class Failed(Exception):
    """A request that failed, with its error class."""

    def __init__(self, klass: str, detail: str):
        super().__init__(f"{klass}: {detail}")
        self.klass, self.detail = klass, detail


def _file_config() -> str:
    path = os.environ.get("MCPSTART_LOAD")
    return open(path, encoding="utf-8").read() if path else ""


@events.init_command_line_parser.add_listener
def _options(parser):
    parser.add_argument("--mcpstart-config", default=_file_config(), include_in_web_ui=False,
                        help="mcpstart's load configuration (JSON; locust_mcp.py)")


@events.init.add_listener
def _init(environment, runner, **_kw):
    ENVIRONMENT["env"] = environment
    if isinstance(runner, MasterRunner):
        runner.register_message(load_workers.MESSAGE,
                                lambda msg, **_kw: WORKERS.append(msg.data))


@events.test_start.add_listener
def _configure(environment, **_kw):
    CONFIG.update(json.loads(environment.parsed_options.mcpstart_config))


@events.spawning_complete.add_listener
def _spawned(**_kw):
    CPU["start"] = time.process_time()
    WINDOW["start"] = time.time()
    WINDOW["deadline"] = WINDOW["start"] + CONFIG["duration_s"]
    gevent.spawn_later(CONFIG["duration_s"], _quit)


def _quit():
    """At the window's end: once no request is in flight (at most timeout_s later), quit; a
    worker sends its records instead (the master quits), a master first waits for every
    worker's (at most RECORDS_WAIT_S more)."""
    last = WINDOW["deadline"] + CONFIG["timeout_s"] + 0.2
    while (IN_FLIGHT or SCHEDULING) and time.time() < last:
        gevent.sleep(0.01)
    runner = ENVIRONMENT["env"].runner
    if isinstance(runner, WorkerRunner):
        runner.send_message(load_workers.MESSAGE, {
            "index": runner.worker_index, "host": socket.gethostname(), "pid": os.getpid(),
            "window": WINDOW, "records": RECORDS, "unfinished": _unfinished(),
            "cpu_s": time.process_time() - CPU["start"], "wall_s": time.time() - WINDOW["start"]})
        return
    while (isinstance(runner, MasterRunner) and len(WORKERS) < CONFIG["workers"]
           and time.time() < last + RECORDS_WAIT_S):
        gevent.sleep(0.01)
    if runner is not None:
        runner.quit()


def _unfinished() -> list:
    return [[name, start] for name, start in IN_FLIGHT.values()]


@events.quitting.add_listener
def _write(environment, **_kw):
    if isinstance(environment.runner, WorkerRunner):
        return
    stats = environment.stats.total
    with open(CONFIG["output"], "w", encoding="utf-8") as out:
        json.dump({"window": WINDOW, "records": RECORDS,
                   "unfinished": _unfinished(),
                   **({"workers": WORKERS} if isinstance(environment.runner, MasterRunner)
                      else {}),
                   "histogram": {str(k): v for k, v in stats.response_times.items()},
                   "locust_requests": stats.num_requests,
                   "locust_failures": stats.num_failures}, out)


def _message(body: bytes, content_type: str, rpc_id) -> dict:
    """The JSON-RPC answer with ``rpc_id`` in a JSON body or an event stream."""
    if content_type == "text/event-stream":
        stream = EventStream()
        bodies = [event.data for event in stream.feed(body + b"\n\n")]
    else:
        bodies = [body]
    for data in bodies:
        try:
            message = json.loads(data)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("id") == rpc_id:
            return message
    raise Failed("protocol", f"no answer with id {rpc_id} in the {content_type or 'body'}")


class McpUser(User):
    """One user: its own keep-alive connection, one request in flight."""

    def wait_time(self):
        return self.pace(self)

    def on_start(self):
        self.pace = (constant_throughput(CONFIG["rate_per_user"])
                     if CONFIG["scenario"] == "rate" else constant(CONFIG.get("think_s", 0)))
        self.http = self.client()
        self.session, self.version, self.next_id, self.stale = None, None, 1, None
        self.idle: list[HTTPClient] = []  # open: connections not carrying a call
        while WINDOW["start"] is None:
            gevent.sleep(0.005)
        if CONFIG["scenario"] == "open":
            runner = ENVIRONMENT["env"].runner
            index, stride = load_workers.share(max(runner.worker_index, 0),
                                               CONFIG.get("workers", 1), next(INDEX),
                                               runner.user_count)
            self.slots = arrivals.slots(WINDOW["start"], CONFIG["duration_s"], CONFIG["rate"],
                                        stride, index)
            SCHEDULING.add(self)

    def on_stop(self):
        SCHEDULING.discard(self)
        self.http.close()
        for http in self.idle:
            http.close()

    @staticmethod
    def client() -> HTTPClient:
        """A new kept-alive connection (its socket timeouts past timeout_s: the whole
        request's bound is gevent.Timeout's)."""
        return HTTPClient(CONFIG["host"], CONFIG["port"], concurrency=1,
                          connection_timeout=CONFIG["timeout_s"] + 1,
                          network_timeout=CONFIG["timeout_s"] + 1)

    @task
    def iteration(self):
        if CONFIG["scenario"] == "session":
            self.initialize()
            self.notify()
            self.call()
            self.delete()
        elif CONFIG["scenario"] == "open":
            self.open_loop()
        else:
            if self.session is None:
                self.end_stale()
                self.initialize()
            self.call()

    def open_loop(self):
        """open: the session (again after a failed initialize: the schedule goes on where
        it was), then every slot of this user's begun on time; returns once all answered."""
        if self.session is None:
            self.initialize()
        calls = gevent.pool.Group()
        arrivals.open_loop(self.slots, time.time, gevent.sleep,
                           lambda intended: calls.spawn(self.open_call, intended))
        SCHEDULING.discard(self)
        calls.join()
        raise StopUser()

    def open_call(self, intended: float):
        """One open-loop call intended at ``intended`` (time.time), on an idle connection
        or a new one; a connection a timeout or a close left in an unknown state is
        dropped."""
        http = self.idle.pop() if self.idle else self.client()
        try:
            self.call(http, intended)
        except Failed as err:
            if err.klass in ("timeout", "connection"):
                http.close()
                return
        self.idle.append(http)

    # ----- the requests ------------------------------------------------------------------
    def headers(self, extra: dict | None = None) -> dict:
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream", **CONFIG["headers"]}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        if self.version:
            headers["MCP-Protocol-Version"] = self.version
        return {**headers, **(extra or {})}

    def initialize(self):
        self.session = self.version = None
        params = {"protocolVersion": "2025-11-25", "capabilities": {},
                  "clientInfo": {"name": "mcpstart-load", "version": "1"}}
        result, headers = self.rpc("initialize", params)
        self.session = headers.get("mcp-session-id")
        self.version = result.get("protocolVersion") if isinstance(result, dict) else None

    def notify(self):
        body = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.exchange("notifications/initialized", "POST", body.encode(), self.headers(), None)

    def call(self, http: HTTPClient | None = None, intended: float | None = None):
        if calls := CONFIG.get("calls"):
            params = random.choices(calls, [c["weight"] for c in calls])[0]["params"]
            name = f"tools/call {params['name']}"
        else:
            params, name = CONFIG["call"], "tools/call"
        result, _ = self.rpc("tools/call", params, http, intended, name)
        content = result.get("content") if isinstance(result, dict) else None
        said = "".join(c.get("text", "") for c in content or [] if isinstance(c, dict))
        if CONFIG["reversed"] and said != params["arguments"]["text"][::-1]:
            raise Failed("protocol", f"tools/call answered {said[:60]!r}")
        if not isinstance(content, list) or result.get("isError") is True:
            raise Failed("protocol", f"tools/call: the tool reported an error or no content: "
                                     f"{said[:60]!r}")

    def delete(self):
        if self.session:
            self.exchange("DELETE", "DELETE", b"", self.headers(), None)
        self.session = self.version = None

    def end_stale(self):
        """DELETE the session an error left behind before a new one begins (a client that
        starts over ends what it started: 2025-11-25, "Session Management")."""
        stale, self.stale = self.stale, None
        if stale:
            self.exchange("DELETE", "DELETE", b"", {**self.headers(), "Mcp-Session-Id": stale},
                          None)

    def rpc(self, method: str, params: dict, http: HTTPClient | None = None,
            intended: float | None = None, name: str | None = None):
        rpc_id, self.next_id = self.next_id, self.next_id + 1
        body = json.dumps({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params})
        return self.exchange(name or method, "POST", body.encode(), self.headers(), rpc_id,
                             http, intended)

    def exchange(self, name: str, method: str, body: bytes, headers: dict, rpc_id,
                 http: HTTPClient | None = None, intended: float | None = None):
        """One request on ``http`` (None: the user's own connection): timed from
        ``intended`` (the open loop's intended send time, time.time; None: from now),
        bounded by timeout_s, classified, recorded and fired as a Locust request event.
        Returns ``(result, headers)`` of a request's answer.

        Raises:
            StopUser: the window is over (nothing more starts; a slot in it still goes).
            Failed: it failed (already recorded); the iteration ends there.
        """
        now = time.time()
        if WINDOW["deadline"] is not None and (intended or now) >= WINDOW["deadline"]:
            raise StopUser()
        key, t0 = object(), time.perf_counter()
        start = now if intended is None else intended
        late = 0.0 if intended is None else arrivals.late_ms(intended, now)
        IN_FLIGHT[key] = (name, start)
        klass = detail = None
        outcome = (None, {})
        try:
            with gevent.Timeout(CONFIG["timeout_s"], Failed("timeout", f"no answer within "
                                                                    f"{CONFIG['timeout_s']:g} s")):
                outcome = self.send(http or self.http, method, body, headers, rpc_id)
        except Failed as err:
            klass, detail = err.klass, err.detail
        except TimeoutError as err:  # the socket's own timeout (set past timeout_s)
            klass, detail = "timeout", f"{type(err).__name__}: {err}"
        except (OSError, HTTPConnectionClosed) as err:  # refused, reset, closed
            klass, detail = "connection", f"{type(err).__name__}: {err}"
        except Exception as err:  # an HTTP answer that cannot be parsed
            klass, detail = "protocol", f"{type(err).__name__}: {err}"
        ms = late + (time.perf_counter() - t0) * 1000
        IN_FLIGHT.pop(key, None)
        RECORDS.append([name, start, ms, klass, detail])
        ENVIRONMENT["env"].events.request.fire(
            request_type=method, name=name, response_time=ms, response_length=0,
            exception=Failed(klass, detail) if klass else None, context={})
        if klass:
            if klass in ("timeout", "connection") and http is None:
                self.http.close()  # its connection is in an unknown state: a new one
                self.http = self.client()
            if CONFIG["scenario"] in ("calls", "rate") and self.session:
                self.stale, self.session = self.session, None
            raise Failed(klass, detail)
        return outcome

    def send(self, http: HTTPClient, method: str, body: bytes, headers: dict, rpc_id):
        response = http.request(method, CONFIG["path"], body=body, headers=headers)
        data = response.read()
        status = response.status_code
        if 400 <= status < 500:
            raise Failed("http_4xx", f"HTTP {status}: {data[:120]!r}")
        if status >= 500:
            raise Failed("http_5xx", f"HTTP {status}: {data[:120]!r}")
        answer_headers = {k.lower(): v for k, v in response.items()}
        if rpc_id is None:
            return None, answer_headers
        content_type = str(answer_headers.get("content-type", "")).split(";")[0].strip()
        message = _message(data, content_type, rpc_id)
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {}
            raise Failed("protocol", f"JSON-RPC error {error.get('code')}: "
                                     f"{str(error.get('message'))[:120]}")
        return message.get("result"), answer_headers
