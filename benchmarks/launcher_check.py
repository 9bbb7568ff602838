"""Is mcpstart's launcher overhead, and its verdict on the launcher's network use, what an
independent clock reads? For each launcher in front of a built reference server, mcpstart
resolves the direct command (launcher.resolve_started) and cold-starts the launched, the
direct and (where the launcher has one) the offline command (cold_start, launcher.run); the
C harness (benchmarks/harness.c, compiled as overhead.py does) times the same three commands.
Every round runs all of them once, mcpstart's and the harness's starts shuffled together, so
the machine's drift hits both clocks and all three series alike.

mcpstart's figures are its launcher block (launcher.block) from its own starts; the harness's
are the median of its per-round differences, launched minus direct (overhead) and launched
minus offline (network share), judged by the same rule (launcher.network: the statistics are
shared, the clocks are not). Target: mcpstart's overhead within 20% or 50 ms of the harness's,
and the same network verdict.

The launchers, none reaching past loopback: ``sh -c 'exec SERVER'`` around the C floor (the
shell execs into the server), ``sh -c 'SERVER'`` around the Python reference server (the shell
stays as its parent), ``npx`` of a local package folder whose bin imports the built TypeScript
reference server (npx-typescript), and ``npx -y reverse-text-bin``, the same package served by
a registry on loopback that answers each request after ``REGISTRY_DELAY_S`` (npx-registry:
npx asks it for the package's metadata on every start, twice, and not at all with
npm_config_offline=true; a network share known to be there). npm_config_cache is a temporary
folder for both.

Prints per launcher both overheads, their ratio, both network verdicts and met / MISSED, with
the load average. Asserts nothing; exits 1 when a target is missed.

Usage: python benchmarks/launcher_check.py [--runs 6] [--warmup 1] [--pause-ms 50] [--seed 0]
                                           [--cache-dir DIR] [LAUNCHERS...]
       LAUNCHERS: any of sh-exec-c, sh-python, npx-typescript, npx-registry (default: all)
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import random
import shlex
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from mcpstart.command import Command
from mcpstart.measure import launcher
from mcpstart.measure.client import Skips
from mcpstart.measure.cold import cold_start
from mcpstart.measure.settings import Settings
from mcpstart.stats import summarize
from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import load_recipes
from overhead import harness_ms  # this folder's: the C harness, one timed start

HERE = Path(__file__).parent
REVISION = "2025-11-25"
OVERHEAD_PCT, OVERHEAD_MS = 20.0, 50.0
"""The target: mcpstart's overhead within 20% or 50 ms of the harness's (issue 23)."""
REGISTRY_DELAY_S = 0.3
"""How long the loopback registry waits before each answer: a slow registry's round trip."""


def npx_package(folder: Path, server: Path) -> Path:
    """A package folder whose one bin, ``reverse-text``, imports the built TypeScript server
    (its own node_modules resolve from where it lies)."""
    package = folder / "reverse-text-bin"
    package.mkdir()
    (package / "package.json").write_text(json.dumps(
        {"name": "reverse-text-bin", "version": "1.0.0", "bin": {"reverse-text": "server.mjs"}}))
    (package / "server.mjs").write_text(f"#!/usr/bin/env node\nimport {json.dumps(str(server))};\n")
    (package / "server.mjs").chmod(0o755)
    return package


def registry(package: Path) -> str:
    """The URL of an npm registry on loopback, in a thread of this process, that serves
    ``package`` (its metadata and its tarball) and waits ``REGISTRY_DELAY_S`` before each
    answer."""
    meta = json.loads((package / "package.json").read_text())
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:
        tar.add(package, "package")
    tgz = packed.getvalue()

    class Registry(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            time.sleep(REGISTRY_DELAY_S)
            if self.path.endswith(".tgz"):
                body = tgz
            else:
                url = f"{base}{meta['name']}/-/{meta['name']}-{meta['version']}.tgz"
                integrity = base64.b64encode(hashlib.sha512(tgz).digest()).decode()
                body = json.dumps({"name": meta["name"], "dist-tags": {"latest": meta["version"]},
                                   "versions": {meta["version"]: {**meta, "dist": {
                                       "tarball": url, "shasum": hashlib.sha1(tgz).hexdigest(),
                                       "integrity": f"sha512-{integrity}"}}}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return base


def built(name: str, cache: Path) -> Command:
    """The command of the reference server ``name``, built or cached; exits when it fails."""
    (recipe,) = load_recipes(HERE.parent / "build-recipes", [name])
    build = ensure_built(recipe, cache)
    if not build.ok:
        raise SystemExit(f"{name}: not built: {build.reason}")
    return build.command()


def launchers(names: list[str], cache: Path, folder: Path) -> dict[str, Command]:
    """The launched commands, by name, of the reference servers they need (built or cached)."""
    out = {}
    if "sh-exec-c" in names:
        out["sh-exec-c"] = Command(["sh", "-c", "exec " + shlex.join(built("c", cache).argv)])
    if "sh-python" in names:
        python = built("python", cache)
        out["sh-python"] = Command(["sh", "-c", shlex.join(python.argv)], python.cwd,
                                   python.env)
    if {"npx-typescript", "npx-registry"} & set(names):
        package = npx_package(folder, Path(built("typescript", cache).argv[-1]))
        env = {"npm_config_cache": str(folder / "npm-cache"),
               "npm_config_update_notifier": "false"}
        if "npx-typescript" in names:
            out["npx-typescript"] = Command(["npx", "-y", str(package)], str(folder), env)
        if "npx-registry" in names:
            out["npx-registry"] = Command(["npx", "-y", "reverse-text-bin"], str(folder),
                                          {**env, "npm_config_registry": registry(package)})
    return out


def check(name: str, command: Command, binary: Path, args) -> bool:
    """One launcher: resolve, then the rounds, then both clocks' figures; True when met."""
    settings = Settings(requested_revision=REVISION, timeout_s=60, pause_ms=args.pause_ms,
                        runs=args.runs, warmup=args.warmup)
    launch = launcher.plan(command)
    launcher.resolve_started(launch, command, settings)
    if launch.direct is None:
        print(f"{name:<16}not resolved: {launch.reason}")
        return False
    commands = {"launched": command, "direct": launch.direct.command()}
    if launch.offline_env:
        commands["offline"] = Command(command.argv, command.cwd,
                                      {**command.env, **launch.offline_env}, command.base_env)
    ours: dict[int, float] = {}
    theirs: dict[str, dict[int, float]] = {series: {} for series in commands}
    rng = random.Random(args.seed)
    for round_ in range(args.warmup + args.runs):
        jobs = [(clock, series) for clock in ("mcpstart", "harness") for series in commands]
        rng.shuffle(jobs)
        for clock, series in jobs:
            if clock == "harness":
                theirs[series][round_] = harness_ms(binary, commands[series], args.pause_ms)
            elif series == "launched":
                ours[round_] = cold_start(command, settings, Skips())["handshake"]
            else:
                launcher.run(launch, series, command, settings, round_)
    if launch.stopped:
        print(f"{name:<16}mcpstart's series stopped: {launch.stopped}")
        return False
    block = launcher.block(launch, ours, args.warmup, None)
    counted = {s: [v for r, v in sorted(values.items()) if r >= args.warmup]
               for s, values in theirs.items()}
    overhead = summarize([a - b for a, b in zip(counted["launched"], counted["direct"])])
    m, h = block["overhead_ms"]["median"], overhead["median"]
    verdicts = ["n/a (no offline setting)"] * 2
    same = True
    if "offline" in counted:
        theirs_verdict, theirs_each, _ = launcher.network(counted["launched"],
                                                          counted["offline"], overhead)
        network_h = summarize([a - b for a, b in zip(counted["launched"], counted["offline"])])
        verdicts = [f"{block['network_each_start']} ({block['network_verdict']}, "
                    f"{block['network_ms']['median']:.1f} ms)",
                    f"{theirs_each} ({theirs_verdict}, {network_h['median']:.1f} ms)"]
        same = block["network_each_start"] == theirs_each
    met = abs(m - h) <= max(OVERHEAD_MS, OVERHEAD_PCT / 100 * abs(h)) and same
    spread = ", ".join(f"{who} [{b['ci_low']:.1f}, {b['ci_high']:.1f}]"
                       for who, b in (("mcpstart", block["overhead_ms"]), ("harness", overhead)))
    print(f"{name:<16}{m:>12.1f}{h:>12.1f}{m / h if h else float('nan'):>8.3f}  "
          f"{'met' if met else 'MISSED'}\n{'':<16}direct: {' '.join(launch.direct.argv)}\n"
          f"{'':<16}overhead median's {overhead['ci_level']:.0%} interval (ms): {spread}\n"
          f"{'':<16}network, mcpstart: {verdicts[0]}\n{'':<16}network, harness:  {verdicts[1]}")
    return met


def arguments(doc: str, runs: int) -> argparse.Namespace:
    """The options of this script and of launcher_parts_check.py (their usage lines)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=runs)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--pause-ms", type=float, default=50.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-dir")
    parser.add_argument("names", nargs="*", metavar="LAUNCHERS")
    return parser.parse_args()


def main() -> None:
    args = arguments(__doc__, 6)
    names = args.names or ["sh-exec-c", "sh-python", "npx-typescript", "npx-registry"]
    with tempfile.TemporaryDirectory() as folder:
        binary = Path(folder) / "harness"
        subprocess.run(["cc", "-O2", "-o", str(binary), str(HERE / "harness.c")], check=True)
        commands = launchers(names, cache_root(args.cache_dir), Path(folder))
        print(f"{args.runs} rounds after {args.warmup} warm-up, each round the launched, direct "
              f"and offline commands once per clock, shuffled together; pause "
              f"{args.pause_ms:g} ms; load average at start "
              f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}, {os.cpu_count()} cores")
        print(f"target: overhead within {OVERHEAD_PCT:g}% or {OVERHEAD_MS:g} ms of the "
              "harness's, the same network verdict")
        print(f"{'launcher':<16}{'mcpstart ms':>12}{'harness ms':>12}{'ratio':>8}  target")
        results = [check(name, command, binary, args) for name, command in commands.items()]
        print(f"load average at end {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
