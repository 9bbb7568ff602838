"""Is mcpstart's large-call figure the server's? Times the 5 MiB reverse_text call on the same
built servers with mcpstart (warm.tool_session, the probe `mcpstart measure` runs: its
``payload.round_trip_ms`` and ``memory.peak_rss_bytes_payload``) and with a plain client
written here, alternating run by run (the order flips every round), each on a fresh server
process.

The plain client: for stdio, subprocess pipes and ``readline()`` on the BufferedReader of
the server's stdout; for HTTP, ``http.client`` on one kept-alive connection (a JSON body
read whole, an event stream read line by line up to the blank line that ends the answer's
event). Both do initialize, notifications/initialized and tools/list, stay idle ``--idle-s``
(mcpstart's settle rule is set to end after the same time), then time the call from the
request handed to the pipe or socket to the answer's last byte read.

Memory, read by this script from /proc on its own: for the plain client's server, each
process's peak RSS (VmHWM) reset before the call (``5`` to /proc/PID/clear_refs) and read
after it, and the tree's RSS (VmRSS summed over the server and its descendants, found by
/proc/PID/stat's ppid) sampled every ``--sample-ms`` during the call. The peak compared is
VmHWM for a one-process server, else the sampled sum, as mcpstart's ``peak_method`` says.

Prints per server the medians over rounds: mcpstart ms, plain ms, their ratio and
difference against the target (mcpstart at most 1.10x the plain client + 5 ms), and the
peaks (mcpstart's and /proc's) with their ratio. Asserts nothing.

Usage: python benchmarks/large_call.py [--rounds 5] [--payload-bytes 5242880] [--idle-s 1]
                                       [--cache-dir DIR] [NAMES...]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path

from mcpstart.defaults import PAYLOAD_BYTES
from mcpstart.measure.client import Skips
from mcpstart.measure.memory import SettleRule
from mcpstart.measure.settings import Settings
from mcpstart.measure.warm import tool_session
from mcpstart.results import ServerResult
from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import PORT, load_recipes
from mcpstart.transports.http import HttpTransport, free_port
from mcpstart.transports.session import Traffic
from mcpstart.wire import payload_text

HERE = Path(__file__).parent
REVISION = "2025-11-25"
TIMEOUT_S = 120
ACCEPT = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
NAMES = ("c", "go", "java", "python", "rust", "typescript",
         "c-http", "go-http", "python-http", "rust-http", "typescript-http")


def target_met(mcpstart_ms: float, plain_ms: float) -> bool:
    """The issue's target for the large call: mcpstart at most 1.10x the plain client + 5 ms."""
    return mcpstart_ms <= 1.10 * plain_ms + 5


# ----- /proc, read here ------------------------------------------------------------------
def tree(root: int) -> list[int]:
    """``root`` and its descendants, from the ppid field of every /proc/PID/stat."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    ppid = int(handle.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += parents.get(pid, [])
    return found


def status_kib(pid: int, key: str) -> int | None:
    """A ``key:`` line of /proc/PID/status in KiB (VmRSS, VmHWM), None when gone."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


class TreeSampler:
    """Samples the summed VmRSS of ``root``'s tree every ``interval_s`` in a thread (a context
    manager; the tree found again every ``RESCAN_S``); ``peak`` in bytes."""

    RESCAN_S = 0.05

    def __init__(self, root: int, interval_s: float):
        self.root, self.interval_s, self.peak = root, interval_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        rescan = 0.0
        while not self._stop.is_set():
            if time.monotonic() >= rescan:
                pids, rescan = tree(self.root), time.monotonic() + self.RESCAN_S
            self.peak = max(self.peak, sum((status_kib(p, "VmRSS") or 0) for p in pids) << 10)
            self._stop.wait(self.interval_s)

    def __enter__(self) -> "TreeSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def reset_marks(pids: list[int]) -> None:
    """Reset each process's VmHWM (``5`` to /proc/PID/clear_refs, Linux >= 4.0)."""
    for pid in pids:
        with open(f"/proc/{pid}/clear_refs", "w") as handle:
            handle.write("5")


def proc_peak(root: int, call, interval_s: float) -> tuple[float, int, str]:
    """``call()`` (the timed call: its ms) with nothing of this script beside it and every
    VmHWM of ``root``'s tree reset before; returns (its ms, the peak bytes, "vmhwm" or
    "sampled"): the mark of a one-process tree, else the tree's sampled RSS during a second
    ``call()`` (so processes born and gone inside it are seen)."""
    pids = tree(root)
    reset_marks(pids)
    ms = call()
    mark = status_kib(root, "VmHWM")
    if len(pids) == 1 and tree(root) == pids:
        return ms, mark << 10, "vmhwm"
    reset_marks(tree(root))
    with TreeSampler(root, interval_s) as sampler:
        call()
    return ms, sampler.peak, "sampled"


# ----- the plain clients -----------------------------------------------------------------
def message(rpc_id: int | None, method: str, params: dict) -> bytes:
    body = {"jsonrpc": "2.0", "method": method, "params": params}
    if rpc_id is not None:
        body["id"] = rpc_id
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


INITIALIZE = message(1, "initialize", {"protocolVersion": REVISION, "capabilities": {},
                                       "clientInfo": {"name": "plain", "version": "0"}})
INITIALIZED = message(None, "notifications/initialized", {})
LIST = message(2, "tools/list", {})


def call_message(text: str) -> bytes:
    return message(3, "tools/call", {"name": "reverse_text", "arguments": {"text": text}})


def check(line: bytes, text: str) -> int:
    """The answer's length, once it is checked to be the reversal of ``text``."""
    answer = json.loads(line)
    got = "".join(c.get("text", "") for c in answer["result"]["content"])
    assert answer["id"] == 3 and got == text[::-1], f"not the reversal: {line[:200]!r}"
    return len(line)


def plain_stdio(command, text: str, idle_s: float, interval_s: float) -> tuple[float, int, str]:
    """(round trip ms, peak bytes, peak method) of one plain stdio session."""
    proc = subprocess.Popen(command.argv, cwd=command.cwd, env=command.environment(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True)

    def answer(rpc_id: int) -> tuple[bytes, int]:
        """The answer line and the perf_counter_ns when its read returned (each line is
        parsed after its stamp: the clock stops at the read)."""
        while True:
            line = proc.stdout.readline()
            at = time.perf_counter_ns()
            assert line, "the server closed stdout"
            if json.loads(line).get("id") == rpc_id:
                return line, at

    try:
        for data in (INITIALIZE, INITIALIZED, LIST):
            proc.stdin.write(data + b"\n")
            proc.stdin.flush()
            if data is not INITIALIZED:
                answer(1 if data is INITIALIZE else 2)
        time.sleep(idle_s)
        request = call_message(text) + b"\n"

        def timed() -> float:
            start = time.perf_counter_ns()
            proc.stdin.write(request)
            proc.stdin.flush()
            line, at = answer(3)
            check(line, text)
            return (at - start) / 1e6

        return proc_peak(proc.pid, timed, interval_s)
    finally:
        proc.stdin.close()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


def read_answer(response: http.client.HTTPResponse, rpc_id: int) -> tuple[bytes, int]:
    """The JSON-RPC answer with ``rpc_id`` from a JSON body or an event stream, and the
    perf_counter_ns when its last byte was read (parsed after that stamp)."""
    if not response.getheader("Content-Type", "").startswith("text/event-stream"):
        body = response.read()
        return body, time.perf_counter_ns()
    data: list[bytes] = []
    while True:
        line = response.readline()
        at = time.perf_counter_ns()
        assert line, "the event stream ended without the answer"
        line = line.rstrip(b"\r\n")
        if line.startswith(b"data:"):
            data.append(line[5:].removeprefix(b" "))
        elif not line and data:
            event, data = b"\n".join(data), []
            if event and json.loads(event).get("id") == rpc_id:  # empty: not dispatched
                return event, at


def plain_http(command, text: str, idle_s: float, interval_s: float) -> tuple[float, int, str]:
    """(round trip ms, peak bytes, peak method) of one plain HTTP session."""
    port = free_port()
    proc = subprocess.Popen([a.replace(PORT, str(port)) for a in command.argv], cwd=command.cwd,
                            env=command.environment(), stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "not listening"
                time.sleep(0.01)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S)
        headers = dict(ACCEPT)

        def post(body: bytes, rpc_id: int | None) -> bytes | None:
            conn.request("POST", "/mcp", body, headers)
            response = conn.getresponse()
            if rpc_id is None:
                response.read()
                return None
            line, _ = read_answer(response, rpc_id)
            response.read()  # the rest of the stream, if any: the connection is reused
            if "Mcp-Session-Id" not in headers and response.getheader("Mcp-Session-Id"):
                headers["Mcp-Session-Id"] = response.getheader("Mcp-Session-Id")
                headers["MCP-Protocol-Version"] = REVISION
            return line

        post(INITIALIZE, 1)
        post(INITIALIZED, None)
        post(LIST, 2)
        time.sleep(idle_s)
        request = call_message(text)

        def timed() -> float:
            start = time.perf_counter_ns()
            conn.request("POST", "/mcp", request, headers)
            response = conn.getresponse()
            line, at = read_answer(response, 3)
            response.read()
            check(line, text)
            return (at - start) / 1e6

        value = proc_peak(proc.pid, timed, interval_s)
        conn.close()
        return value
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()


# ----- mcpstart ----------------------------------------------------------------------------
def mcpstart_run(name: str, command, http: bool, payload: int,
                 idle_s: float) -> tuple[float, int, str]:
    """(round trip ms, peak bytes, peak method) of mcpstart's tool session on a fresh server
    (round trips off; the settle rule ends after ``idle_s``, as the plain client idles)."""
    settings = Settings(requested_revision=REVISION, timeout_s=TIMEOUT_S, payload_bytes=payload,
                        round_trips=0, settle=SettleRule(min_s=idle_s, max_s=idle_s))
    if http:
        settings = replace(settings, spawner=lambda c: HttpTransport(c))
    row = ServerResult(name)
    tool_session(command, settings, row, Skips(), Traffic())
    assert row.payload["verified"], f"{name}: mcpstart found no reversal: {row.payload}"
    return (row.payload["round_trip_ms"], row.memory["peak_rss_bytes_payload"],
            row.memory["peak_method"])


def compare(name: str, command, http: bool, rounds: int, payload: int, idle_s: float,
            interval_s: float) -> dict:
    """``rounds`` alternating pairs of runs; the medians and the verdict."""
    text = payload_text(payload)
    plain = plain_http if http else plain_stdio
    ours, theirs = [], []
    for round_ in range(rounds):
        pair = [lambda: ours.append(mcpstart_run(name, command, http, payload, idle_s)),
                lambda: theirs.append(plain(command, text, idle_s, interval_s))]
        for run in pair if round_ % 2 == 0 else reversed(pair):
            run()
    m = statistics.median(r[0] for r in ours)
    p = statistics.median(r[0] for r in theirs)
    peak_m = statistics.median(r[1] for r in ours)
    peak_p = statistics.median(r[1] for r in theirs)
    return {"name": name, "mcpstart_ms": m, "plain_ms": p, "met": target_met(m, p),
            "peak_mcpstart": peak_m, "peak_proc": peak_p,
            "methods": f"{ours[0][2]}/{theirs[0][2]}",
            "all_mcpstart": [r[0] for r in ours], "all_plain": [r[0] for r in theirs]}


def line(result: dict) -> str:
    m, p = result["mcpstart_ms"], result["plain_ms"]
    mib = 1 << 20
    return (f"{result['name']:<16}{m:>11.1f}{p:>10.1f}{m / p:>7.2f}{m - p:>+9.1f}  "
            f"{'met' if result['met'] else 'MISSED':<7}{result['peak_mcpstart'] / mib:>9.1f}"
            f"{result['peak_proc'] / mib:>9.1f}{result['peak_mcpstart'] / result['peak_proc']:>7.2f}"
            f"  {result['methods']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--payload-bytes", type=int, default=PAYLOAD_BYTES)
    parser.add_argument("--idle-s", type=float, default=1.0)
    parser.add_argument("--sample-ms", type=float, default=2.0)
    parser.add_argument("--cache-dir")
    parser.add_argument("--verbose", action="store_true", help="every run's figure too")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()

    recipes = load_recipes(HERE.parent / "build-recipes", args.names or list(NAMES))
    print(f"{args.rounds} rounds per server, mcpstart and the plain client alternating (order "
          f"flipped every round), {args.payload_bytes} bytes, idle {args.idle_s:g} s before the "
          f"call; load average at start {' '.join(f'{v:.2f}' for v in os.getloadavg())}, "
          f"{os.cpu_count()} cores")
    print(f"{'server':<16}{'mcpstart':>11}{'plain':>10}{'ratio':>7}{'diff':>9}  {'target':<7}"
          f"{'peak MiB':>9}{'/proc':>9}{'ratio':>7}  method")
    for recipe in recipes:
        build = ensure_built(recipe, cache_root(args.cache_dir))
        if not build.ok:
            print(f"{recipe.name}: not built: {build.reason}")
            continue
        result = compare(recipe.name, build.command(), recipe.transport == "http", args.rounds,
                         args.payload_bytes, args.idle_s, args.sample_ms / 1000)
        print(line(result), flush=True)
        if args.verbose:
            print(f"{'':<16}mcpstart {result['all_mcpstart']}\n{'':<16}plain    "
                  f"{result['all_plain']}")
    print(f"target: mcpstart <= 1.10 x plain + 5 ms (median of rounds); load average at end "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
