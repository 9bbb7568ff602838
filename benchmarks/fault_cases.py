"""Every family of docs/faults.md as a fake server (tests/fakes/fake_server.py),
measured the way a user would: `mcpstart measure --runs 3 --timeout 10 --server NAME=...`,
one server per run, each run timed. Prints each server's wall time, status and cause, then
one report over all their results files. A server should never take longer than its waits
need: the timeout plus a few seconds of diagnosis, and only where it truly sent nothing.

Usage: python benchmarks/fault_cases.py [--timeout 10] [--runs 3] [NAME...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FAKE = Path(__file__).resolve().parent.parent / "tests" / "fakes" / "fake_server.py"
PY = sys.executable
CASES = {
    "1-banner-noise": "--banner --not-jsonrpc --debug-mid",
    "2-notify-first": "--notify-first",
    "3-crlf": "--crlf",
    "4-lsp-silent": "--lsp",
    "4-lsp-reply": "--lsp-reply",
    "5-chunked-5mib": "--chunked --stderr-bytes 1048576",
    "6-slow-start": "--slow-start 3",
    "7-exits-at-once": "--need-env FOO_API_KEY",
    "8-no-flush": "--no-flush",
    "9-sh-wrapper": None,  # sh -c without exec, a child ignoring SIGTERM
    "10-ignores-eof": "--ignore-eof --trap-term",
    "11-asks-first": "--ask-first",
    "12-batch": "--batch",
    "12-no-jsonrpc": "--no-jsonrpc",
    "12-pretty": "--pretty",
    "12-string-id": "--string-id",
    "13-paged": "--pages 3",
    "13-cursor-loop": "--cursor-loop",
    "14-launcher": "--launcher",
    "15-call-error": "--call-error",
    "15-exit-on-large": "--exit-on-large",
    "16-only-initialize": "--only-initialize",
    "17-deep-nesting": "--deep-small-call 100000",
    "17-idle-watchdog": "--idle-exit 2",
    "17-cancelled": "--cancel-call",
    "17-blocked-on-sampling": "--sampling-call",
    "17-answer-on-stderr": "--answer-on-stderr",
    "17-flood": "--flood 20000",
    "17-no-tools-capability": "--no-tools-capability",
}


def command(name: str) -> str:
    if CASES[name] is None:
        return f"sh -c '{PY} {FAKE} --child --ignore-eof'"
    return f"{PY} {FAKE} {CASES[name]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", default="10")
    parser.add_argument("--runs", default="3")
    parser.add_argument("names", nargs="*", choices=[[], *CASES], default=[])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        files = []
        print(f"{'server':<20}{'wall s':>8}  exit  status: cause")
        for name in args.names or CASES:
            out = Path(folder) / f"{name}.json"
            start = time.monotonic()
            done = subprocess.run(
                ["mcpstart", "measure", "--runs", args.runs, "--timeout", args.timeout,
                 "--round-trips", "10", "-o", str(out), "--server", f"{name}={command(name)}"],
                capture_output=True, text=True)
            wall = time.monotonic() - start
            row = json.loads(out.read_text())["servers"][0]
            cause = (row["reason"] or "").splitlines()[0][:110] if row["reason"] else ""
            print(f"{name:<20}{wall:>8.1f}  {done.returncode:>4}  {row['status']}"
                  f"{': ' + cause if cause else ''}")
            files.append(str(out))
        combined = json.loads(Path(files[0]).read_text())
        combined["servers"] = [json.loads(Path(f).read_text())["servers"][0] for f in files]
        Path(folder, "all.json").write_text(json.dumps(combined))
        metrics = ("status", "handshake_ms.median", "phases_ms.tools_list.median",
                   "memory.idle_rss_bytes", "memory.processes", "memory.peak_rss_bytes_payload",
                   "tools.count", "payload.verified", "shutdown")
        report = subprocess.run(["mcpstart", "report", str(Path(folder, "all.json")),
                                 "--transpose", *(a for m in metrics for a in ("--metrics", m))],
                                capture_output=True, text=True)
        print(report.stdout or report.stderr)


if __name__ == "__main__":
    main()
