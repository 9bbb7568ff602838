"""``mcpstart doctor``: what this machine gives mcpstart, each piece probed for real, and what
a missing piece means for the figures.

What a default run (``mcpstart measure`` on the reference recipes) needs; missing, doctor
exits 1:

- a system that can start servers (``os.posix_spawn`` and ``select.poll``: not Windows;
  platforms.refusal); without, doctor checks only the toolchains and the load.
- pidfds watched with ``poll`` (Linux >= 5.3): every server process is tracked, waited for
  and reaped through its pidfd (transports/tree.py, transports/stdio.py). Where there are
  none (macOS), measure uses the portable process layer (platforms.py): doctor says so in
  its "process layer" row and leaves out the Linux probes below, which that layer does not use.
- ``/proc/PID/statm`` (RSS) and ``/proc/PID/status`` (VmHWM): every memory figure (RSS,
  peak), under the linux layer.
- at least one recipe whose toolchains are all found: a missing toolchain only skips that
  server, but a run that can build no server measures nothing. With ``require_all`` (as
  ``measure --require-all``, where a skipped server fails the run) every toolchain is needed.

Missing, these only change figures (doctor says how, exit 0):

- clear_refs (writing 5 to /proc/PID/clear_refs resets VmHWM): the exact peak RSS under the
  large tool call; without it the peak is sampled (``peak_method`` "sampled"), a lower bound.
- smaps_rollup: PSS and USS per process; without it psutil reads /proc/PID/smaps (slower),
  and without either PSS and USS are n/a.
- the child subreaper (``PR_SET_CHILD_SUBREAPER``): a process that double-forks out of the
  server's process group is still found, counted and killed (``orphans``).
- a 1-minute load average above the core count: cold starts queue for a CPU (the same rule
  as measure's "load" warning, measure/stats.py ``series_warnings``).

Launchers and runtimes that editors' configs name (npx, node, uvx, uv, pipx, docker) are each
run with ``--version``; one missing only fails the servers launched with it (exit 0). With
``--config`` files, every program their servers start is looked up on the PATH the server
gets; one missing is needed (exit 1), as that server cannot start.

Each capability is probed on a real child process: one that touches 64 MiB, frees it and
waits on stdin (VmHWM, clear_refs, smaps_rollup, its exit through a pidfd), and a shell that
starts ``sleep`` in the background and exits (adoption by the subreaper).
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass

MIB = 1024 * 1024
TOUCH_MIB = 64
"""What the probe child allocates, touches and frees: its VmHWM stays this far above RSS."""
WAIT_S = 10.0
"""The longest wait for a probe child."""
CHILD = (f"import sys\nb = b'x' * ({TOUCH_MIB} * 1024 * 1024)\ndel b\n"
         "print('ready', flush=True)\nsys.stdin.read()\n")


@dataclass
class Check:
    """One row of the doctor's table.

    Attributes:
        name: what was checked ("pidfd", "toolchain go", ...).
        status: "ok", "missing", "busy" (the load average) or "absent" (a launcher not on
            PATH: it changes no figure, only which servers can start).
        found: what the probe saw (a version line, the values read, the error).
        meaning: what it gives the figures when ok, what changes when not.
        needed: a default run needs it: not ok means exit status 1.
    """

    name: str
    status: str
    found: str
    meaning: str
    needed: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _mib(value: int) -> str:
    return f"{value / MIB:.1f} MiB"


def check_status(pid: int) -> Check:
    """RSS and VmHWM of the probe child, read as measure reads them (measure.memory: RSS
    from /proc/PID/statm, VmHWM from /proc/PID/status)."""
    from .measure.memory import high_water_mark, rss as resident

    gives = "RSS and peak RSS (VmHWM) of every process of a server"
    rss, hwm = resident(pid), high_water_mark(pid)
    if rss is None or hwm is None:
        return Check("/proc/PID/statm + status", "missing", "no RSS in statm or no VmHWM line "
                     "in status", "no memory figures at all", True)
    return Check("/proc/PID/statm + status", "ok", f"RSS {_mib(rss)} (statm), VmHWM "
                 f"{_mib(hwm)} (status)", gives, True)


def check_clear_refs(pid: int) -> Check:
    """Write 5 to the probe child's clear_refs; it works when VmHWM drops by the freed
    TOUCH_MIB to about the current RSS."""
    without = ("peak RSS under the large call is sampled (peak_method \"sampled\"): a lower "
               "bound that can miss a short spike")
    from .measure.memory import high_water_mark

    try:
        before = high_water_mark(pid)
        with open(f"/proc/{pid}/clear_refs", "w") as handle:
            handle.write("5")
        after = high_water_mark(pid)
    except OSError as err:
        return Check("clear_refs", "missing", f"cannot reset VmHWM: {err}", without)
    if before is None or after is None or before - after < TOUCH_MIB // 2 * MIB:
        return Check("clear_refs", "missing", f"written, but VmHWM did not drop "
                     f"({before} -> {after} bytes)", without)
    return Check("clear_refs", "ok", f"VmHWM reset: {_mib(before)} -> {_mib(after)}",
                 "exact peak RSS under the large tool call (peak_method \"vmhwm\")")


def check_smaps(pid: int) -> Check:
    """Read Pss from the probe child's /proc/PID/smaps_rollup."""
    gives = "PSS and USS per process (pages shared with other processes split fairly)"
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            pss = next(int(l.split()[1]) * 1024 for l in handle if l.startswith("Pss:"))
    except (OSError, ValueError, StopIteration) as err:
        if os.path.exists(f"/proc/{pid}/smaps"):
            return Check("smaps_rollup (PSS)", "missing", "only /proc/PID/smaps",
                         "PSS and USS are read from smaps instead: slower reads")
        return Check("smaps_rollup (PSS)", "missing", f"neither smaps_rollup nor smaps: {err}",
                     "no PSS or USS (n/a in tables): only RSS, which counts shared pages "
                     "once per process")
    return Check("smaps_rollup (PSS)", "ok", f"Pss {_mib(pss)}", gives)


def check_pidfd(child: subprocess.Popen) -> Check:
    """Open a pidfd on the probe child, see it quiet while the child runs, then end the child
    (close its stdin) and see the pidfd become readable."""
    without = "mcpstart cannot follow a server's processes: no run (needs Linux >= 5.3)"
    try:
        fd = os.pidfd_open(child.pid)
    except (AttributeError, OSError) as err:
        return Check("pidfd + poll", "missing", f"pidfd_open: {err}", without, True)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        early = poller.poll(0)
        child.stdin.close()
        ended = poller.poll(WAIT_S * 1000)
    finally:
        os.close(fd)
    if early or not ended:
        return Check("pidfd + poll", "missing", "the pidfd did not tell the child's exit",
                     without, True)
    return Check("pidfd + poll", "ok", "exit seen through the pidfd",
                 "exits timed to one poll wake-up; every process waited for and reaped", True)


def process_checks() -> list[Check]:
    """The checks on one probe child (CHILD): status, clear_refs, smaps_rollup, pidfd."""
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        ready = select.select([child.stdout], [], [], WAIT_S)[0] and child.stdout.readline()
        if ready != "ready\n":
            return [Check("probe process", "missing", f"{sys.executable} -c ... did not start "
                          f"(exit code {child.poll()})", "/proc and pidfds were not probed",
                          True)]
        return [check_status(child.pid), check_clear_refs(child.pid), check_smaps(child.pid),
                check_pidfd(child)]
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        child.stdout.close()


def check_subreaper() -> Check:
    """Become a child subreaper (transports.tree.child_subreaper, as measure does) and see a
    background ``sleep`` of an exiting shell adopted by this process."""
    from .transports.tree import child_subreaper

    with child_subreaper() as became:
        return _adopts(became)


def _adopts(became: bool) -> Check:
    without = ("a process that double-forks out of a server's process group escapes: its "
               "memory is not counted, it is not reported in orphans and may outlive the run")
    if not became:
        return Check("child subreaper", "missing", "prctl(PR_SET_CHILD_SUBREAPER) refused",
                     without)
    shell = subprocess.run(["/bin/sh", "-c", "sleep 30 </dev/null >/dev/null 2>&1 & echo $!"],
                           capture_output=True, text=True, timeout=WAIT_S)
    if not shell.stdout.strip().isdigit():
        return Check("child subreaper", "missing", f"the probe shell failed: {shell.stderr}",
                     without)
    orphan = int(shell.stdout)
    try:
        adopted = os.waitpid(orphan, os.WNOHANG) == (0, 0)  # only a child can be waited for
    except ChildProcessError:
        adopted = False
    os.kill(orphan, signal.SIGKILL)  # ours either way: the shell started it just now
    if adopted:
        os.waitpid(orphan, 0)
        return Check("child subreaper", "ok", f"adopted the orphan {orphan}",
                     "a process that double-forks out of the process group is still found, "
                     "counted and killed (orphans)")
    return Check("child subreaper", "missing", "the orphan was not adopted", without)


def check_layer() -> Check:
    """Whether this system can start servers (platforms.refusal), and through which process
    layer measure follows them by default (platforms.default_layer)."""
    from . import platforms

    if why := platforms.refusal():
        return Check("platform", "missing", why, "measure and revisions refuse here, before "
                     "any build", True)
    if platforms.default_layer() == "linux":
        return Check("process layer", "ok", "linux (os.pidfd_open)", "every figure: exits "
                     "through pidfds, memory and the start's CPU from /proc (the probes below)")
    return Check("process layer", "missing", "portable: no os.pidfd_open", "measure follows "
                 "the servers with psutil: exits seen by a waiter per process, RSS and USS, "
                 "the peak sampled; " + "; ".join(sorted(set(platforms.NOT_MEASURED.values()))))


def check_load() -> Check:
    """The 1-minute load average against the logical cores."""
    if not hasattr(os, "getloadavg"):
        return Check("load average", "missing", f"none on {sys.platform}", "no \"load\" "
                     "warning: a busy machine is not said")
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    found = f"{load:.2f} (1 min) on {cores} cores"
    if load > cores:
        return Check("load average", "busy", found, "cold starts queue for a CPU: slower, "
                     "noisier figures (measure adds a \"load\" warning)")
    return Check("load average", "ok", found, "at most the core count: cold starts need not "
                 "queue for a CPU")


def toolchain_checks(recipes, require_all: bool = False) -> list[Check]:
    """One row per toolchain of the recipes (its version line, or why it is unusable, from
    targets.build.toolchain_version), then one "servers" row: which recipes have every
    toolchain, needed to have at least one."""
    from .targets.build import toolchain_version

    users: dict[tuple, tuple] = {}  # (name, version argv) -> (toolchain, [recipe, ...])
    for recipe in recipes:
        for tool in recipe.toolchains:
            users.setdefault((tool.name, tuple(tool.version_argv)), (tool, []))[1].append(recipe)
    checks, missing = [], set()
    for (name, _), (tool, using) in users.items():
        version, problem = toolchain_version(tool)
        names = ", ".join(r.name for r in using)
        if problem:
            missing |= {r.name for r in using}
            checks.append(Check(f"toolchain {name}", "missing", problem,
                                f"{names} skipped" + (", which fails the run (--require-all)"
                                                      if require_all else
                                                      "; the other servers are measured"),
                                require_all))
        else:
            checks.append(Check(f"toolchain {name}", "ok", version, f"builds {names}",
                                require_all))
    ready = [r.name for r in recipes if r.name not in missing]
    found = f"{len(ready)} of {len(recipes)} can be built" + (f": {', '.join(ready)}"
                                                               if ready else "")
    checks.append(Check("servers", "ok" if ready else "missing", found,
                        "measured by a default run" if ready else
                        "no server can be built: a default run measures nothing", True))
    return checks


LAUNCHERS = {"npx": "npm packages", "node": "Node.js scripts", "uvx": "PyPI packages",
             "uv": "Python projects (uv run)", "pipx": "PyPI packages (pipx run)",
             "docker": "container images"}
"""The launchers and runtimes editors' configs most often start servers with: what each runs."""


def program_version(path: str) -> str:
    """The first line ``path --version`` prints (stdout, else stderr), or why there is none;
    at most WAIT_S seconds."""
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True,
                              timeout=WAIT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{path}: --version failed: {err}"
    lines = (done.stdout or done.stderr).strip().splitlines()
    return f"{path}: {lines[0] if lines else f'exit code {done.returncode}'}"


def launcher_checks() -> list[Check]:
    """One row per LAUNCHERS program: its path and version, or not on PATH (not needed)."""
    checks = []
    for name, runs in LAUNCHERS.items():
        path = shutil.which(name)
        checks.append(Check(f"launcher {name}", "ok", program_version(path),
                            f"servers a config starts with {name} ({runs}) can run") if path
                      else Check(f"launcher {name}", "absent", "not on PATH",
                                 f"a server a config starts with {name} fails to start"))
    return checks


def config_checks(paths) -> list[Check]:
    """For each config file, one row per program its servers start (found on the PATH each
    server gets, with its version), needed; a file that cannot be read is a needed row.
    Entries mcpstart skips (remote, disabled) are not checked."""
    from .targets.configs import ConfigError, load_config

    checks = []
    for path in paths:
        try:
            config = load_config(path)
        except ConfigError as err:
            checks.append(Check(f"config {path}", "missing", str(err), "no server of it runs",
                                True))
            continue
        programs: dict[tuple[str, str | None], list[str]] = {}  # (argv[0], path) -> servers
        for target in config.targets:
            env = {**os.environ, **(target.base_env or {}), **target.env}
            found = shutil.which(target.argv[0], path=env.get("PATH"))
            programs.setdefault((target.argv[0], found), []).append(target.name)
        for (program, found), names in programs.items():
            name, who = f"program {os.path.basename(program)}", ", ".join(names)
            checks.append(Check(name, "ok", program_version(found), f"starts {who}", True)
                          if found else Check(name, "missing", f"{program} is not on the "
                                              "server's PATH", f"{who} cannot start", True))
    return checks


def run_checks(recipes_option: str | None = None, require_all: bool = False,
               configs=()) -> list[Check]:
    """Every check, in table order: toolchains of the recipe folder (found as measure finds
    it: ``--recipes``, ./build-recipes, the packaged copy), the launchers, the programs of
    ``configs`` (config file paths), the process layer, the process checks and the
    subreaper (under the linux layer only: the Linux probes), the load average. A
    recipe folder that cannot be read is a failed "servers" row."""
    from .targets.recipes import RecipeError, find_recipe_folder, load_recipes

    try:
        folder, _which = find_recipe_folder(recipes_option)
        checks = toolchain_checks(load_recipes(folder), require_all)
    except RecipeError as err:
        checks = [Check("servers", "missing", str(err), "a default run has no recipes", True)]
    layer = check_layer()
    probes = [*process_checks(), check_subreaper()] if layer.ok else []
    return [*checks, *launcher_checks(), *config_checks(configs), layer, *probes, check_load()]


def verdict(checks: list[Check]) -> tuple[str, int]:
    """The closing sentence and the exit status: 1 when a needed check is not ok."""
    needed = [c.name for c in checks if c.needed and not c.ok]
    other = [c.name for c in checks if not c.needed and c.status not in ("ok", "absent")]
    absent = [c.name.split()[-1] for c in checks if c.status == "absent"]
    also = f" Not on PATH: {', '.join(absent)} (servers started with them fail)." if absent else ""
    if needed:
        return (f"not ready: {', '.join(needed)} missing, and a default run needs "
                f"{'it' if len(needed) == 1 else 'them'}"
                + (f"; also {', '.join(other)}" if other else "") + "." + also), 1
    if other:
        return (f"ready, with less: {', '.join(other)}; the table says what that changes "
                "in the figures." + also), 0
    return "ready: everything mcpstart uses is here." + also, 0


def to_json(checks: list[Check]) -> str:
    """The checks as one JSON object (``doctor --format json``, docs/cli.md): ``ready``
    (exit status 0), ``exit_status``, ``verdict`` (the closing sentence) and ``checks``:
    ``[{name, status, found, meaning, needed, ok}]`` in table order (Check's fields)."""
    import json
    from dataclasses import asdict

    sentence, status = verdict(checks)
    return json.dumps({"ready": status == 0, "exit_status": status, "verdict": sentence,
                       "checks": [{**asdict(c), "ok": c.ok} for c in checks]}, indent=2) + "\n"


def render(checks: list[Check], tablefmt: str = "github") -> str:
    """The checks as a table (any tabulate format) and the verdict below it."""
    from tabulate import tabulate

    rows = [[c.name, c.status + (" (needed)" if c.needed and not c.ok else ""), c.found,
             c.meaning] for c in checks]
    table = tabulate(rows, headers=["check", "status", "found", "for the figures"],
                     tablefmt=tablefmt, disable_numparse=True)
    return f"{table}\n\n{verdict(checks)[0]}\n"
