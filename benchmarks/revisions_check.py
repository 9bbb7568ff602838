"""Is mcpstart's revision matrix what the servers answer? For each reference server, the matrix
of ``mcpstart revisions NAME`` (its default wait, derived from the server's first start) beside
the same probes made by a raw client written here: one fresh process per probe (subprocess and
pipes, its own JSON lines, no mcpstart transport code), ``server/discover`` with the
2026-07-28 envelope, then ``initialize`` asking each revision mcpstart asks, each given a
generous 30 s for an answer. Servers alternate: mcpstart's matrix, then the raw one.

Prints per server and probe both outcomes (outcome, the revision answered or the error code,
the verdict), then "equal" or "DIFFERS" per server (target: equal), with the load average.
Asserts nothing.

Usage: PYTHONPATH=. python benchmarks/revisions_check.py [--wait-s 30] [--cache-dir DIR]
                                                          [NAMES...]   (default: the stdio ones)
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcpstart.measure.revisions import FUTURE_REVISION, HANDSHAKE_REVISIONS
from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import load_recipes
from mcpstart.wire import MODERN_REVISION

HERE = Path(__file__).parent
STDIO = ("c", "go", "java", "python", "rust", "typescript")
META = "io.modelcontextprotocol/"
CLIENT = {"name": "revisions-check", "version": "1"}
FIELDS = ("outcome", "answered", "error_code", "verdict")


def requests() -> list[dict]:
    """The probes, as this client writes them: discover with the modern envelope, then
    initialize asking each revision (the handshake era's, 2026-07-28, a future one)."""
    discover = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
        f"{META}protocolVersion": MODERN_REVISION, f"{META}clientInfo": CLIENT,
        f"{META}clientCapabilities": {}}}}
    return [discover] + [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": revision, "capabilities": {}, "clientInfo": CLIENT}}
        for revision in (*HANDSHAKE_REVISIONS, MODERN_REVISION, FUTURE_REVISION)]


def raw_probe(command, request: dict, wait_s: float) -> dict:
    """Spawn ``command`` (a mcpstart Command: argv, cwd, environment), write ``request`` as
    one line, read stdout lines until the response with id 1, EOF or ``wait_s``; then close
    stdin and end the process group. Returns {method, requested, outcome, answered,
    error_code, verdict} in the shape of mcpstart's matrix rows."""
    params = request["params"]
    row = {"method": request["method"], "requested": params.get("protocolVersion")
           or params["_meta"][f"{META}protocolVersion"], "outcome": "no_answer",
           "answered": None, "error_code": None}
    supported = False
    proc = subprocess.Popen(command.argv, cwd=command.cwd, env=command.environment(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.flush()
        message = _response(proc.stdout.fileno(), time.monotonic() + wait_s)
    except BrokenPipeError:
        message = "exited"
    finally:
        _end(proc)
    if message == "exited":
        row["outcome"] = "exited"
    elif message is not None:
        error, result = message.get("error"), message.get("result")
        if isinstance(error, dict):
            row.update(outcome="error", error_code=error.get("code"))
        elif not isinstance(result, dict):
            row["outcome"] = "error"
        else:
            row["outcome"] = "answered"
            listed = result.get("supportedVersions")
            row["answered"] = (", ".join(map(str, listed)) if isinstance(listed, list)
                               else result.get("protocolVersion"))
            modern = (request["method"] == "server/discover" and "resultType" in result
                      and isinstance(listed, list))
            supported = (row["requested"] in map(str, listed) if modern
                         else row["method"] == "initialize" and row["answered"] == row["requested"])
    # silence tells nothing; an answer naming the revision asked supports it; any other
    # answer, error or exit does not
    row["verdict"] = ("unknown" if row["outcome"] == "no_answer"
                      else "supported" if supported else "unsupported")
    return row


def _response(fd: int, deadline: float) -> dict | str | None:
    """The first JSON object on ``fd`` with id 1 and no method; "exited" on EOF; None when
    ``deadline`` passes first. Lines that are not JSON objects are skipped."""
    buffer = b""
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return "exited"
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("id") == 1 and "method" not in message:
                return message
    return None


def _end(proc: subprocess.Popen) -> None:
    """Close stdin, wait 2 s, then SIGKILL the process group."""
    try:
        proc.stdin.close()
    except BrokenPipeError:
        pass
    try:
        proc.wait(2)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    proc.stdout.close()


def mcpstart_matrix(name: str, cache_dir: str | None) -> dict:
    """``mcpstart revisions NAME -o FILE`` in a child process: the row's protocol block."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "r.json"
        subprocess.run([sys.executable, "-c", "from mcpstart.cli import main; main()",
                        "revisions", name, "--quiet", "-o", str(out),
                        "--recipes", str(HERE.parent / "build-recipes"),
                        *(["--cache-dir", cache_dir] if cache_dir else [])],
                       env={**os.environ, "PYTHONPATH": str(HERE.parent)},
                       stdout=subprocess.DEVNULL, check=False)
        return json.loads(out.read_text())["servers"][0].get("protocol") or {}


def compare(name: str, command, wait_s: float, cache_dir: str | None = None
            ) -> tuple[dict, list[dict], list[dict]]:
    """mcpstart's protocol block and matrix rows, and the raw rows, for one server."""
    protocol = mcpstart_matrix(name, cache_dir)
    mine = [{k: r.get(k) for k in ("method", "requested", *FIELDS)}
            for r in protocol.get("matrix") or []]
    raw = [raw_probe(command, request, wait_s) for request in requests()]
    return protocol, mine, raw


def _cell(row: dict | None) -> str:
    if row is None:
        return "(not probed)"
    said = row["answered"] or ("" if row["error_code"] is None else str(row["error_code"]))
    said = said if len(said) <= 24 else said[:23] + "…"
    return f"{row['outcome']} {said} -> {row['verdict']}".replace("  ", " ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wait-s", type=float, default=30.0)
    parser.add_argument("--cache-dir")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    print(f"load average at start {' '.join(f'{v:.2f}' for v in os.getloadavg())}, "
          f"{os.cpu_count()} cores; raw probe wait {args.wait_s:g} s")
    for recipe in load_recipes(HERE.parent / "build-recipes", args.names or list(STDIO)):
        build = ensure_built(recipe, cache_root(args.cache_dir))
        if not build.ok:
            print(f"{recipe.name}: not built: {build.reason}")
            continue
        protocol, mine, raw = compare(recipe.name, build.command(), args.wait_s,
                                      args.cache_dir)
        wait = protocol.get("probe_wait") or {}
        print(f"\n{recipe.name} (mcpstart's probe wait {wait.get('s')} s, {wait.get('rule')}; "
              f"supported {', '.join(protocol.get('supported_revisions') or []) or 'none'})")
        print(f"  {'probe':<28}{'mcpstart':<48}raw ({args.wait_s:g} s)")
        for index, theirs in enumerate(raw):
            ours = mine[index] if index < len(mine) else None
            mark = "" if ours == theirs else "   <- differs"
            print(f"  {theirs['method'] + ' ' + theirs['requested']:<28}{_cell(ours):<48}"
                  f"{_cell(theirs)}{mark}")
        print(f"  {recipe.name}: {'equal' if mine == raw else 'DIFFERS'}")
    print(f"\nload average at end {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
