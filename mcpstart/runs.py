"""The store of past runs: ``measure`` without -o never overwrites its results file. Before a
run writes ``mcpstart-results.json``, the file already there (and its TOML copy) moves into
``mcpstart-runs/`` beside it as the next numbered run (``0001.json``, ``0002.json`` ...), so
"measure, change, measure, compare" keeps both runs. ``report``, ``compare`` and ``plot``
name a stored run as ``@-1`` (the previous run), ``@-2`` (the one before) or ``@N`` (run N);
-o naming an existing file is refused without --force, and no output replaces an input or the
run's results file (docs/results.md, "The store of past runs"; docs/cli.md).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .defaults import OUTPUT

STORE = "mcpstart-runs"
"""The folder of past runs, beside the default results file."""
_NUMBERED = re.compile(r"^(\d{4,})\.json$")


def store_folder(default: Path = Path(OUTPUT)) -> Path:
    return default.parent / STORE


def stored(folder: Path | None = None) -> list[Path]:
    """The stored runs (JSON files), oldest first; [] without a store."""
    folder = store_folder() if folder is None else folder
    try:
        names = [(int(m.group(1)), p) for p in folder.iterdir()
                 if (m := _NUMBERED.match(p.name))]
    except OSError:
        return []
    return [p for _, p in sorted(names)]


def keep(path: Path) -> Path | None:
    """Move the results file ``path`` (and its TOML copy, if any) into the store as the next
    numbered run; returns where the JSON file went, or None when there was none.

    Raises:
        ValueError: the store cannot be made or written (the message says which folder).
    """
    if not path.exists():
        return None
    folder = store_folder(path)
    try:
        folder.mkdir(exist_ok=True)
        runs = stored(folder)
        number = int(_NUMBERED.match(runs[-1].name).group(1)) + 1 if runs else 1
        target = folder / f"{number:04d}.json"
        if path.with_suffix(".toml").exists():
            os.replace(path.with_suffix(".toml"), target.with_suffix(".toml"))
        os.replace(path, target)
    except OSError as err:
        raise ValueError(f"cannot keep the previous run in {str(folder)!r}: "
                         f"{err.strerror or err}") from err
    return target


@contextmanager
def claimed(path: Path) -> Iterator[None]:
    """The run's claim on its results file ``path`` while the block runs: a lock file beside
    it (``NAME.lock``, created only where none exists, holding this process's pid), removed
    at the end, so that a second run writing the same file in the meantime (two terminals, a
    CI matrix sharing a folder) is refused instead of replacing the first run's results. A
    lock whose process no longer exists (a run killed by SIGKILL) is taken over.

    Raises:
        ValueError: another live process holds the lock (the message names it), or the
            lock cannot be made (the folder is not writable: the message says which).
    """
    import psutil

    lock = path.with_name(path.name + ".lock")
    while True:
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            break
        except FileExistsError:
            try:
                holder = int(lock.read_text().strip() or 0)
            except (OSError, ValueError):
                holder = 0
            if holder and holder != os.getpid() and psutil.pid_exists(holder):
                raise ValueError(f"another mcpstart run (pid {holder}) is writing "
                                 f"{str(path)!r}: wait for it to end, or give -o another "
                                 f"file (a stale claim: remove {str(lock)!r})") from None
            lock.unlink(missing_ok=True)  # its run is gone: take the claim over
        except OSError as err:
            raise ValueError(f"cannot claim {str(path)!r} for this run ({str(lock)!r}): "
                             f"{err.strerror or err}") from err
    with os.fdopen(fd, "w") as file:
        file.write(f"{os.getpid()}\n")
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


def refuse_overwrite(outputs, force: bool, inputs=(), note: str = "") -> None:
    """Refuse the output files ``outputs`` (-o, --export-*; None and ``-``, stdout, pass) that
    would lose a file: one of ``inputs`` (the command's input files, the run's own results
    file) always, even with ``force``; any other existing file without ``force`` (``note``
    ends that message).

    Raises:
        ValueError: the first file refused, named, and why.
    """
    guarded = {Path(p).resolve() for p in inputs}
    for out in outputs:
        if out is None or str(out) == "-":
            continue
        if Path(out).resolve() in guarded:
            raise ValueError(f"{str(out)!r} is an input of this command or the run's own "
                             "results file: not overwriting it (give the output another name)")
        if Path(out).exists() and not force:
            raise ValueError(f"{str(out)!r} exists: give --force to replace it, or another "
                             f"name{note}")


def output_for(value: str | None, force: bool, default: str | None = OUTPUT, inputs=()
               ) -> Path | None:
    """The results file a run writes: ``value`` (-o), refused as ``refuse_overwrite`` does
    (``inputs``: the command's input files); no ``value`` is ``default`` (None: no file),
    whose earlier run the caller moves into the store (``keep``) once the input is valid.

    Raises:
        ValueError: as results.output_path; as refuse_overwrite.
    """
    from .results import output_path

    if value is None and default is None:
        return None
    path = output_path(value if value is not None else default)
    if value is not None:
        refuse_overwrite([path], force, inputs, f" (without -o, every run is kept in {STORE}/)")
    return path


def resolve(value: str) -> str:
    """A results file's path as given, or a stored run named ``@-N`` (N runs back: ``@-1`` is
    the previous one) or ``@N`` (run number N) as its path.

    Raises:
        ValueError: no such stored run (the message says how many there are).
    """
    match = re.fullmatch(r"@(-?)(\d+)", value)
    if not match:
        return value
    runs, number = stored(), int(match.group(2))
    if match.group(1):
        found = runs[-number] if 0 < number <= len(runs) else None
    else:
        found = next((p for p in runs if int(_NUMBERED.match(p.name).group(1)) == number),
                     None)
    if found is None:
        raise ValueError(f"no stored run {value}: {store_folder()}/ holds "
                         f"{len(runs)} (mcpstart measure without -o keeps each run there)")
    return str(found)
