"""Build servers from their recipes into a cache folder outside the source tree.

A build folder is keyed by a hash of the recipe file, the source files it names and the
versions of its toolchains, so an unchanged server is never rebuilt and a changed one is.
A recipe without ``[build]`` is not built: its Build has status "no-build" and no folder.
"""

from __future__ import annotations

import fnmatch
import glob
import hashlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .. import Progress, Step, interrupts
from ..command import Command
from .recipes import Recipe

CACHE_ENV = "MCPSTART_CACHE_DIR"
MARKER = "mcpstart-build.json"
BUILD_TIMEOUT_S = 1800
LOG_TAIL_LINES = 25
KEEP_BUILDS = 3
_CSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
"""An ANSI control sequence (ECMA-48 CSI): Debian's Maven 3.8 prints resets even with -B."""


def tree_bytes(include: list[str], exclude: list[str] = ()) -> int:
    """Apparent size in bytes of the regular files under the ``include`` globs (files or
    folders), leaving out any path matching an ``exclude`` glob and all below it. Symlinks are
    not followed; a file with several hard links counts once."""
    seen: set[tuple[int, int]] = set()
    total = 0

    def excluded(path: str) -> bool:
        return any(fnmatch.fnmatch(path, pattern) for pattern in exclude)

    def add(path: str) -> None:
        nonlocal total
        stat = os.lstat(path)
        if (stat.st_dev, stat.st_ino) not in seen and os.path.isfile(path) and not os.path.islink(path):
            seen.add((stat.st_dev, stat.st_ino))
            total += stat.st_size

    for pattern in include:
        for top in glob.glob(pattern):
            if excluded(top):
                continue
            if not os.path.isdir(top) or os.path.islink(top):
                add(top)
                continue
            for folder, dirs, files in os.walk(top):
                dirs[:] = [d for d in dirs if not excluded(os.path.join(folder, d))]
                for name in files:
                    path = os.path.join(folder, name)
                    if not excluded(path):
                        add(path)
    return total


def report_line(build: "Build") -> str:
    """What ``mcpstart build`` prints for one recipe's build."""
    name = build.recipe.name
    if build.status == "skipped":
        return f"{name}: skipped: {build.reason}"
    if build.status == "failed" and build.log is None:
        return f"{name}: failed: {build.reason}"
    if build.status == "failed":
        return f"{name}: failed: {build.reason} (log: {build.log})\n{build.log_tail}"
    if build.status == "no-build":
        return f"{name}: nothing to build (the recipe has no [build])"
    return f"{name}: {build.status} ({build.build_s:.1f} s) {build.folder}"


def cache_root(option: str | os.PathLike | None = None) -> Path:
    """The cache folder: ``option``, else $MCPSTART_CACHE_DIR, else the user cache dir
    (platformdirs; ~/.cache/mcpstart on Linux)."""
    if option:
        return Path(option).expanduser().resolve()
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_cache_dir("mcpstart"))


@dataclass
class Build:
    """What became of one recipe's build.

    Attributes:
        status: "built" (just now), "cached" (up to date, no work done), "no-build" (the
            recipe has no ``[build]``: spawned as written), "skipped" (a toolchain is
            missing) or "failed".
        reason: why skipped or failed (one line), else None.
        log_tail: the last lines of the log of a failed build.
        folder: the build folder (``{build}``); its ``src`` subfolder is ``{src}``. None
            without a build.
        build_s: wall time of the build that produced ``folder``, in seconds.
        dev_tree_bytes: the largest size of ``folder`` (footprint.tree_bytes) seen after any
            build step, so files a later step deleted (``npm prune``) still count; kept in
            the build's marker file, so a cached build knows it too.
        log: the build log.
        toolchains: name -> first line of its version output.
    """

    recipe: Recipe
    status: str
    reason: str | None = None
    log_tail: str = ""
    folder: Path | None = None
    build_s: float | None = None
    dev_tree_bytes: int | None = None
    log: Path | None = None
    toolchains: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the server is built and can be spawned."""
        return self.status in ("built", "cached", "no-build")

    def expand(self, text: str) -> str:
        """Replace ``{build}`` and ``{src}`` with this build's folders and ``{cache}`` with
        the cache folder they are in (a recipe without a build has no placeholders:
        load_recipe refuses them)."""
        if self.folder is None:
            return text
        return (text.replace("{build}", str(self.folder)).replace("{src}", str(self.folder / "src"))
                .replace("{cache}", str(self.folder.parent.parent)))

    def path(self, text: str) -> str:
        """``text`` expanded, a relative path taken from the sources: ``{src}`` when built,
        else the recipe's source folder, else the recipe folder's parent (where ``source``
        is taken from). For the globs of ``[artifact]`` and ``[dependencies]``."""
        recipe = self.recipe
        base = (self.folder / "src" if self.folder else recipe.source_dir
                or recipe.path.parent.parent)
        return os.path.join(base, self.expand(text))

    def environment(self) -> dict[str, str]:
        """The build steps' environment: mcpstart's plus the recipe's ``build.env``."""
        return {**os.environ, **{k: self.expand(v) for k, v in self.recipe.build_env.items()}}

    def command(self, extra_env: dict[str, str] | None = None) -> Command:
        """How to spawn the built server, with ``extra_env`` (e.g. ``--env``) on top."""
        env = {k: self.expand(v) for k, v in self.recipe.run_env.items()}
        cwd = self.recipe.run_cwd
        return Command([self.expand(a) for a in self.recipe.run_argv],
                       self.expand(cwd) if cwd else None, {**env, **(extra_env or {})})


def toolchain_version(tool) -> tuple[str | None, str | None]:
    """Ask one toolchain (a recipe's ``Toolchain``) its version. Returns ``(version line,
    None)`` (the first line of stdout, else of stderr, ANSI control sequences removed), or
    ``(None, why it is unusable)``: "<program> not found", or its version command failed."""
    program = tool.version_argv[0]
    if shutil.which(program) is None:
        return None, f"{program} not found"
    argv = " ".join(tool.version_argv)
    try:
        done = subprocess.run(tool.version_argv, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"{program} found, but `{argv}` failed: {err}"
    lines = _CSI.sub("", done.stdout or done.stderr).strip().splitlines()
    if done.returncode:
        return None, (f"{program} found, but `{argv}` exited with code {done.returncode}: "
                      f"{lines[-1] if lines else ''}")
    return (lines[0] if lines else ""), None


def toolchain_versions(recipe: Recipe) -> tuple[dict[str, str], str | None]:
    """Ask each toolchain its version. Returns ``(versions, missing)``: ``missing`` says why
    a toolchain is unusable (``toolchain_version``), else None."""
    versions = {}
    for tool in recipe.toolchains:
        version, missing = toolchain_version(tool)
        if missing:
            return versions, missing
        versions[tool.name] = version
    return versions, None


def build_key(recipe: Recipe, versions: dict[str, str]) -> str:
    """sha256 hex of the recipe file, each source file (path and bytes), the toolchain
    versions and, for an SDK variant, what it is built from (``SdkSource.key``: version and
    date, or checkout path and fingerprint): anything else in the source folder (caches,
    editor files) does not count."""
    digest = hashlib.sha256(recipe.path.read_bytes())
    for rel in recipe.source_files():
        digest.update(b"\0file\0" + str(rel).encode() + b"\0")
        digest.update((recipe.source_dir / rel).read_bytes())
    digest.update(json.dumps(versions, sort_keys=True).encode())
    if recipe.sdk_source is not None:
        digest.update(b"\0sdk\0" + json.dumps(recipe.sdk_source.key(), sort_keys=True).encode())
    return digest.hexdigest()


def ensure_built(recipe: Recipe, root: Path, rebuild: bool = False,
                 progress: Progress = lambda _: None) -> Build:
    """Build ``recipe`` unless an up-to-date build exists (``rebuild`` forces one); a recipe
    without ``[build]`` only has its toolchains checked (status "no-build").

    Never raises for a failed step, a missing toolchain or a broken recipe file
    (``recipe.broken``): those come back as a Build with status "failed" or "skipped" and a
    reason (a broken recipe's: "unusable recipe: ...", no log). Another mcpstart building the same server
    into the same cache is waited for (a file lock). After a successful build only the
    KEEP_BUILDS most recently used build folders of the server are kept.
    """
    if recipe.broken is not None:
        progress(Step(f"{recipe.name}: unusable recipe: {recipe.broken}", "build", recipe.name))
        return Build(recipe, "failed", f"unusable recipe: {recipe.broken}")
    versions, missing = toolchain_versions(recipe)
    if missing:
        return Build(recipe, "skipped", missing, toolchains=versions)
    if not recipe.has_build:
        progress(Step(f"{recipe.name}: nothing to build (the recipe has no [build])", "build",
                      recipe.name))
        return Build(recipe, "no-build", toolchains=versions)
    key = build_key(recipe, versions)
    # a workload server's name is a reference server's too ("python"): its own folders
    stem = f"{recipe.workload}-{recipe.name}" if recipe.workload else recipe.name
    folder = root / "builds" / f"{stem}-{key[:16]}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(_lock_path(folder), "w") as lock:
        import fcntl  # POSIX only: builds run where measure runs (platform.py)

        fcntl.flock(lock, fcntl.LOCK_EX)  # another mcpstart building the same: wait, then reuse
        return _ensure_built(recipe, folder, key, versions, rebuild, progress)


def _ensure_built(recipe: Recipe, folder: Path, key: str, versions: dict[str, str],
                  rebuild: bool, progress: Progress) -> Build:
    marker = folder / MARKER
    done = _read_marker(marker) if not rebuild else None
    if done:
        os.utime(folder)  # most recently used: kept when older builds are pruned
        progress(Step(f"{recipe.name}: up to date (built in {done['build_s']:.1f} s at "
                      f"{done['finished']}), nothing to do", "build", recipe.name))
        return Build(recipe, "cached", folder=folder, build_s=done["build_s"],
                     dev_tree_bytes=done["dev_tree_bytes"], log=folder / "build.log",
                     toolchains=versions)
    build = Build(recipe, "built", folder=folder, log=folder / "build.log", toolchains=versions)
    progress(Step(f"{recipe.name}: building (log: {build.log})", "build", recipe.name,
                  log=build.log))
    failure = _run_build(build)
    if failure:
        build.status, build.reason, build.log_tail = "failed", failure, _tail(build.log)
        progress(Step(f"{recipe.name}: build failed: {failure} (log: {build.log})", "build",
                      recipe.name))
        return build
    tmp = marker.with_suffix(".tmp")
    tmp.write_text(json.dumps({"key": key, "build_s": build.build_s,
                               "dev_tree_bytes": build.dev_tree_bytes, "toolchains": versions,
                               "finished": datetime.now(timezone.utc).isoformat(timespec="seconds")}))
    tmp.replace(marker)
    _prune(folder)
    progress(Step(f"{recipe.name}: built in {build.build_s:.1f} s", "build", recipe.name))
    return build


def _lock_path(folder: Path) -> Path:
    return folder.with_name(folder.name + ".lock")


def _read_marker(marker: Path) -> dict | None:
    """The finished build's record, or None when absent, unreadable or from an mcpstart that
    did not record the dev tree (then: build again)."""
    try:
        done = json.loads(marker.read_text())
        build_s, dev_tree = done.get("build_s"), done.get("dev_tree_bytes")
        ok = (isinstance(build_s, (int, float)) and math.isfinite(build_s) and done.get("finished")
              and type(dev_tree) is int and dev_tree >= 0)
        return done if ok else None
    except (OSError, ValueError, AttributeError):
        return None


def _prune(current: Path) -> None:
    """Keep the KEEP_BUILDS most recently used build folders of this server, so switching
    between checkouts or branches does not rebuild each time; remove older ones."""
    same = re.compile(re.escape(current.name.rsplit("-", 1)[0]) + r"-[0-9a-f]{16}")
    builds = sorted((p for p in current.parent.iterdir() if same.fullmatch(p.name)),
                    key=lambda p: p.stat().st_mtime, reverse=True)
    for old in builds[KEEP_BUILDS:]:
        if old != current:
            shutil.rmtree(old, ignore_errors=True)
            _lock_path(old).unlink(missing_ok=True)


def _run_build(build: Build) -> str | None:
    """Copy the sources and run the steps, noting the build folder's largest size after any
    step in ``build.dev_tree_bytes``; returns the failure's cause, or None."""
    recipe = build.recipe
    shutil.rmtree(build.folder, ignore_errors=True)
    src = build.folder / "src"
    src.mkdir(parents=True)
    for rel in recipe.source_files():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(recipe.source_dir / rel, src / rel)
    env = build.environment()
    build.build_s, build.dev_tree_bytes = 0.0, 0
    with open(build.log, "w", encoding="utf-8") as log:
        for number, step in enumerate(recipe.steps, 1):
            argv = [build.expand(a) for a in step]
            log.write(f"$ {' '.join(argv)}\n")
            log.flush()
            start = time.perf_counter()
            cause = _run_step(argv, src, env, log)
            build.build_s += time.perf_counter() - start  # the steps' time, not the sizing's
            if cause:
                log.write(f"mcpstart: {cause}\n")
                log.close()
                return f"step {number} ({' '.join(argv)}) {cause}"
            build.dev_tree_bytes = max(build.dev_tree_bytes, tree_bytes([str(build.folder)]))
    return None


def _run_step(argv: list[str], cwd: Path, env: dict[str, str], log) -> str | None:
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as err:
        return f"could not start: {err.strerror or err}"
    try:
        code = proc.wait(timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        code = None
    finally:  # also on an exit signal; and background processes a step left behind go too
        with interrupts.shielded():
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    if code is None:
        return f"took longer than {BUILD_TIMEOUT_S} s and was killed"
    return f"exited with code {code}" if code else None


def _tail(log: Path) -> str:
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(lines[-LOG_TAIL_LINES:])
