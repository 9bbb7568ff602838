"""Launcher overhead: what a package runner or a shell in front of a server costs, in time and
memory, measured against the server it starts run directly.

A server is launched when its argv[0] is a known launcher (targets.cmdline.launcher_of:
npx, npm exec, pnpm dlx, bunx, uvx, uv tool run, pipx run, sh -c ...). The command it resolves
to is read from the live tree once the server has answered ``initialize``: the process that
holds the write end of the server's stdout pipe and is not itself a launcher (the first in
tree order), by its /proc cmdline, cwd and environ. An exec'ing launcher (``sh -c 'exec ...'``)
keeps its pid and shows a changed cmdline, so the spawned process itself can be the server.
The environ is what the direct run is spawned with; it is never stored (it holds the target's
secrets), only argv and cwd are.

The direct command is cold-started in the same rounds as the launched one (a series of its
own that shares every round with it, in either run order: run.run_order), so each round gives
one difference; and where the launcher has a setting that keeps it off the network when its
cache holds the package (OFFLINE_ENV), the launched command runs a third series with it set,
in the same rounds. Whether the launcher went to the network on every start is judged by
compare's test and threshold (stats.slower): offline against launched (``network``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import psutil

from ..command import Command
from ..defaults import ALPHA, THRESHOLD_PCT
from ..stats import slower, summarize
from ..targets.cmdline import launcher_of
from ..transports.session import Session, Traffic
from ..wire import initialize_request
from . import spawn
from .client import Skips
from .cold import cold_start
from .settings import Settings

NPM_OFFLINE = {"npm_config_offline": "true"}
"""npm's ``offline`` config as an environment variable: "Force offline mode: no network requests
will be done during install" (docs.npmjs.com, config#offline); npx, npm exec and pnpm read
npm_config_* variables."""
UV_OFFLINE = {"UV_OFFLINE": "1"}
"""uv's "Disable network access" (docs.astral.sh/uv, environment variables, UV_OFFLINE: the
``--offline`` flag)."""
OFFLINE_ENV = {"npx": NPM_OFFLINE, "npm exec": NPM_OFFLINE, "pnpm dlx": NPM_OFFLINE,
               "pnpx": NPM_OFFLINE, "uvx": UV_OFFLINE, "uv tool run": UV_OFFLINE}
"""Launchers that may ask their registry on a start although their cache holds the package,
and the variable that keeps them off the network."""
O_ACCMODE, O_RDONLY = 0o3, 0o0


@dataclass
class Direct:
    """The resolved server: ``argv`` and ``cwd`` (stored), ``environ`` (used, never stored),
    ``pid`` in the tree it was read from."""

    argv: list[str]
    cwd: str | None
    environ: dict[str, str] = field(repr=False)
    pid: int = 0

    def command(self) -> Command:
        """The direct command: its own argv, cwd and exactly the environment it had."""
        return Command(list(self.argv), self.cwd, {}, dict(self.environ))


@dataclass
class Launch:
    """One launched server's launcher series: ``kind`` (the launcher, "npx"), ``direct`` once
    resolved (else ``reason`` says why not), and per series the handshake ms by round."""

    kind: str
    direct: Direct | None = None
    reason: str | None = None
    direct_runs: dict[int, float] = field(default_factory=dict)
    offline_runs: dict[int, float] = field(default_factory=dict)
    stopped: dict[str, str] = field(default_factory=dict)
    skips: dict[str, Skips] = field(default_factory=dict)

    @property
    def offline_env(self) -> dict[str, str]:
        return OFFLINE_ENV.get(self.kind, {})

    def series(self) -> list[str]:
        """The extra series of the rounds: "direct" once resolved, "offline" where the
        launcher has an offline setting."""
        names = ["direct"] if self.direct is not None else []
        return names + (["offline"] if self.offline_env else [])


def plan(command: Command) -> Launch | None:
    """The Launch of a server spawned by ``command``, or None when argv[0] is no launcher."""
    kind = launcher_of(command.argv)
    return None if kind is None else Launch(kind)


def stdout_pipe(session: Session) -> int | None:
    """The inode of the server's stdout pipe (mcpstart holds its read end), or None where
    the transport has no pipe."""
    prepared = getattr(session.transport, "prepared", None)
    if prepared is None:
        return None
    try:
        return os.fstat(prepared.parent_fds[1]).st_ino
    except OSError:
        return None


def holds_write_end(pid: int, inode: int) -> bool:
    """Whether process ``pid`` has the pipe ``inode`` open for writing (/proc/PID/fd and
    fdinfo's flags)."""
    target = f"pipe:[{inode}]"
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != target:
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                flags = next((int(line.split()[1], 8) for line in info
                              if line.startswith("flags:")), O_RDONLY)
        except (OSError, ValueError):
            continue
        if flags & O_ACCMODE != O_RDONLY:
            return True
    return False


def resolve(session: Session) -> Direct | str:
    """The direct command of a launched server in a running ``session`` (module doc), or the
    reason it cannot be resolved."""
    inode = stdout_pipe(session)
    if inode is None or session.processes is None:
        return "the transport has no process tree to read"
    for proc in session.processes.scan():
        try:
            with proc.oneshot():
                cmdline = proc.cmdline()
                if not cmdline or launcher_of(cmdline) or not holds_write_end(proc.pid, inode):
                    continue
                return Direct(cmdline, proc.cwd(), proc.environ(), proc.pid)
        except psutil.Error:
            continue
    return ("no process of the tree other than a launcher holds the server's stdout (the "
            "launcher serves it itself, or the server's /proc entries cannot be read)")


def resolve_started(launch: Launch, command: Command, settings: Settings) -> None:
    """One untimed start of the launched server, with the whole ``settings.timeout_s`` (a
    first download happens here, as in revisions' first start), read once ``initialize`` is
    answered: fills ``launch.direct``, or ``launch.reason``."""
    first = initialize_request(settings.requested_revision)
    try:
        with spawn.started([(command, first)], settings, timed=False) as (session,):
            session.wait(1, settings.timeout_s)
            found = resolve(session)
    except Exception as err:  # the launched series fails the row itself; here only the reason
        launch.reason = f"the launched server did not answer initialize: {err}"
        return
    if isinstance(found, str):
        launch.reason = found
    else:
        launch.direct = found


def run(launch: Launch, series: str, command: Command, settings: Settings, round_: int,
        before_spawn=lambda: None, traffic: Traffic | None = None) -> None:
    """One cold start of ``series`` ("direct": the resolved command; "offline": the launched
    command with OFFLINE_ENV set) for ``round_``; a failure stops that series (``stopped``),
    never the row. What the start saw is added to ``traffic`` (the row's)."""
    if series in launch.stopped:
        return
    if series == "direct":
        spawned = launch.direct.command()
    else:
        spawned = Command(command.argv, command.cwd, {**command.env, **launch.offline_env},
                          command.base_env)
    try:
        sample = cold_start(spawned, settings, launch.skips.setdefault(series, Skips()),
                            before_spawn)
    except Exception as err:
        launch.stopped[series] = f"{series} cold start, round {round_ + 1}: {err}"
        return
    if traffic is not None:
        traffic.merge(sample["traffic"])
    (launch.direct_runs if series == "direct" else launch.offline_runs)[round_] = \
        sample["handshake"]


def _paired(first: dict[int, float], second: dict[int, float], warmup: int
            ) -> tuple[list[float], list[float]]:
    """The rounds both series have, counted rounds only: their values in round order."""
    rounds = sorted(r for r in first.keys() & second.keys() if r >= warmup)
    return [first[r] for r in rounds], [second[r] for r in rounds]


def _stats(values: dict[int, float], warmup: int) -> dict:
    return summarize([v for r, v in sorted(values.items()) if r >= warmup],
                     [v for r, v in sorted(values.items()) if r < warmup])


def network(launched: list[float], offline: list[float], overhead: dict | None
            ) -> tuple[str, bool | None, float]:
    """Whether the launcher went to the network on every start, from the launched and the
    offline series of the same rounds (ms, round order) and the ``overhead`` block (the stats
    of launched minus direct, None when the direct command is not known).

    compare's test and threshold (stats.slower), offline as OLD: "regression" (p at
    most alpha and the launched median more than the threshold above the offline one) is a
    network share, True; "ok" and "slower, within N%" (the launched median within the
    threshold) are False; "too few runs" and "inconclusive (p = P)" are None. The network
    share is part of the launcher's overhead (launched minus offline is launched minus direct
    less what the offline launcher costs), so a share whose median lies above the upper end
    of the overhead median's confidence interval (stats.median_ci) says the series are not
    comparable: "inconclusive: ..." and None, not a number.

    Returns:
        ``(verdict, each_start, p)``.
    """
    test = slower(offline, launched, ALPHA, THRESHOLD_PCT)
    share = summarize([a - b for a, b in zip(launched, offline)])["median"]
    high = (overhead or {}).get("ci_high")
    if share is not None and high is not None and share > high:
        return (f"inconclusive: the network share ({share:.0f} ms) is more than the whole "
                f"launcher overhead it is part of ({overhead['median']:.0f} ms, its median's "
                f"{overhead['ci_level']:.0%} interval ending at {high:.0f} ms)", None, test.p)
    if test.verdict == "regression":
        return test.verdict, True, test.p
    within = test.verdict == "ok" or test.verdict.startswith("slower, within")
    return test.verdict, False if within else None, test.p


def block(launch: Launch, launched: dict[int, float], warmup: int,
          memory: dict | None) -> dict:
    """The row's ``launcher`` block from the rounds (``launched``: the launched series'
    handshake ms by round; rounds under ``warmup`` are warm-ups) and the tool session's
    ``memory`` block.

    Returns:
        ``{kind, argv, cwd, reason, launched_ms, direct_ms, overhead_ms, overhead_bytes,
        overhead_rss_bytes, offline_env, offline_ms, network_ms, network_each_start,
        network_verdict, network_p, stopped}``: ``overhead_ms`` the stats of the per-round
        differences (launched minus direct), ``network_ms`` of launched minus offline;
        ``overhead_bytes`` the tree's idle PSS minus the server's own (its process and its
        descendants), RSS beside it; ``network_verdict``, ``network_each_start`` and
        ``network_p`` as ``network`` gives them (True: a network share; False: none above
        compare's threshold; None: too few runs, or inconclusive, the verdict says why).
    """
    out = {"kind": launch.kind, "argv": None, "cwd": None, "reason": launch.reason,
           "launched_ms": None, "direct_ms": None, "overhead_ms": None,
           "overhead_bytes": None, "overhead_rss_bytes": None,
           "offline_env": sorted(launch.offline_env) or None, "offline_ms": None,
           "network_ms": None, "network_each_start": None, "network_verdict": None,
           "network_p": None, "stopped": dict(launch.stopped)}
    if launch.direct is not None:
        through, direct = _paired(launched, launch.direct_runs, warmup)
        out.update(argv=list(launch.direct.argv), cwd=launch.direct.cwd,
                   launched_ms=summarize(through), direct_ms=_stats(launch.direct_runs, warmup),
                   overhead_ms=summarize([a - b for a, b in zip(through, direct)]))
        out.update(_memory_overhead(memory, launch.direct.argv))
    if launch.offline_env and launch.offline_runs:
        through, offline = _paired(launched, launch.offline_runs, warmup)
        verdict, each_start, p = network(through, offline, out["overhead_ms"])
        out.update(offline_ms=_stats(launch.offline_runs, warmup),
                   network_ms=summarize([a - b for a, b in zip(through, offline)]),
                   network_verdict=verdict, network_p=p, network_each_start=each_start)
    return out


def _memory_overhead(memory: dict | None, argv: list[str]) -> dict:
    """The tree's idle PSS and RSS minus those of the server (the process whose cmdline is
    ``argv``, and its descendants), from a ``memory`` block's process rows."""
    rows = (memory or {}).get("processes") or []
    rows = [r for r in rows if r.get("idle_rss_bytes") is not None]
    server = next((r for r in rows if r.get("cmdline") == argv), None)
    if server is None:
        return {}
    inside, grew = {server["pid"]}, True
    while grew:
        grew = False
        for row in rows:
            if row.get("ppid") in inside and row["pid"] not in inside:
                inside.add(row["pid"])
                grew = True
    out = {}
    for key, name in (("idle_pss_bytes", "overhead_bytes"), ("idle_rss_bytes", "overhead_rss_bytes")):
        values = [r.get(key) for r in rows]
        if None not in values:
            out[name] = sum(r[key] for r in rows if r["pid"] not in inside)
    return out
