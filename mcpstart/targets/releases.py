"""The released versions of an SDK and their publication times, read where each package
manager reads them (docs/sdk-versions.md, "Where the releases are listed"):

- npm: ``npm view PKG time --json`` (the recipe's ``list``): versions and dates in one.
- PyPI: ``pip index versions --pre PKG`` (the recipe's ``list``) for the versions; the dates
  from the index's PEP 691 JSON project page (what pip itself reads; per file
  ``upload-time`` and ``yanked``, the earliest file of a version being its date), at pip's
  index (``PIP_INDEX_URL``, else PyPI's).
- Go: ``go list -m -versions -json MODULE`` (the recipe's ``list``; the module proxy may list
  only part of the releases: a version asked for by name is tried even when unlisted) and
  ``go list -m -json MODULE@VERSION`` for its ``Time``.
- crates.io: cargo has no listing command (``cargo search`` does not list versions), so the
  entry cargo itself reads: the crate's file in the sparse index (one JSON line per release:
  ``vers``, ``yanked``, ``pubtime``).
- Maven Central: the artifact's ``maven-metadata.xml`` (what the versions plugin reads); it
  gives no dates.

Versions sort by PEP 440 (``packaging``), which reads semver too (``v1.10.0`` after
``v1.9.0``, ``2.0.0-beta.5`` before ``2.0.0``); a version it cannot read (Maven's
``2.0.0-M2``) sorts as a pre-release of its numbers.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from packaging.version import InvalidVersion, Version

TIMEOUT_S = 60
"""The longest wait for one listing command or index request."""
CRATES_INDEX = "https://index.crates.io/"
"""cargo's default sparse index of crates.io."""
MAVEN_CENTRAL = "https://repo.maven.apache.org/maven2/"
PYPI_SIMPLE = "https://pypi.org/simple/"
OWN_DAY = timedelta(days=1)
"""``{date}`` is a release's publication time plus this: a workspace sibling is published
after the package itself (npm: @modelcontextprotocol/core 18 ms after server 2.0.0), and
npm's ``--before`` has whole-second resolution."""


class ReleaseError(ValueError):
    """The releases of a package cannot be read; the message says which command or address
    failed and how."""


@dataclass(frozen=True)
class Release:
    """One published version: ``published`` in UTC (None where the registry gives no date),
    ``yanked`` when the registry withdrew it."""

    version: str
    published: datetime | None = None
    yanked: bool = False


def version_key(version: str) -> Version:
    """The sort key of a version string (module doc)."""
    try:
        return Version(version.removeprefix("v"))
    except InvalidVersion:
        numbers = re.findall(r"\d+", version) or ["0"]
        last = numbers.pop() if len(numbers) > 1 else "0"
        return Version(".".join(numbers) + f".dev{last}")


def is_pre(version: str) -> bool:
    """True for a pre-release (``2.0.0rc1``, ``v1.8.0-pre.1``, ``3.0.0-beta.5``, ``2.0.0-M2``)."""
    key = version_key(version)
    return key.is_prerelease or key.is_devrelease


def own_day(published: datetime) -> str:
    """``{date}`` for a release published at ``published``: OWN_DAY later, ISO 8601 UTC to
    the second (``2026-07-30T09:15:09Z``)."""
    return (published + OWN_DAY).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _run(argv: list[str]) -> str:
    with tempfile.TemporaryDirectory() as scratch:  # go list -m wants no module around it
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S,
                                  cwd=scratch, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise ReleaseError(f"`{' '.join(argv)}` failed: {err}") from err
    if done.returncode:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:]
        raise ReleaseError(f"`{' '.join(argv)}` exited with code {done.returncode}"
                           + (f": {tail[0]}" if tail else ""))
    return done.stdout


def _get(url: str, accept: str = "*/*") -> bytes:
    import urllib.request

    request = urllib.request.Request(url, headers={"Accept": accept,
                                                   "User-Agent": "mcpstart"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            return answer.read()
    except OSError as err:
        raise ReleaseError(f"cannot read {url}: {err}") from err


def _date(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


def parse_npm_time(text: str) -> list[Release]:
    """``npm view PKG time --json``: {version: ISO time}, besides "created"/"modified"."""
    times = json.loads(text)
    return [Release(v, _date(t)) for v, t in times.items() if v not in ("created", "modified")]


def parse_pip_index(text: str) -> list[str]:
    """The versions of ``pip index versions``: its "Available versions: a, b, ..." line."""
    for line in text.splitlines():
        if line.startswith("Available versions:"):
            return [v.strip() for v in line.split(":", 1)[1].split(",") if v.strip()]
    raise ReleaseError(f"pip index versions printed no versions: {text.strip()[:200]!r}")


def parse_pep691(text: str | bytes) -> dict[str, Release]:
    """A PEP 691 JSON project page: version -> its earliest file's upload time; yanked when
    every file of it is. Versions named by PEP 700's ``versions`` and no file are left out."""
    from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, \
        parse_sdist_filename, parse_wheel_filename

    files: dict[str, list[dict]] = {}
    for entry in json.loads(text).get("files", []):
        name = entry.get("filename", "")
        try:
            version = str(parse_wheel_filename(name)[1] if name.endswith(".whl")
                          else parse_sdist_filename(name)[1])
        except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
            continue
        files.setdefault(version, []).append(entry)
    return {version: Release(version, min((d for e in entries
                                           if (d := _date(e.get("upload-time")))), default=None),
                             all(e.get("yanked") for e in entries))
            for version, entries in files.items()}


def parse_go_versions(text: str) -> list[str]:
    """``go list -m -versions -json MODULE``: its ``Versions``."""
    return list(json.loads(text).get("Versions") or [])


def parse_sparse_index(text: str) -> list[Release]:
    """A crate's sparse index file: one JSON object per line (``vers``, ``yanked``,
    ``pubtime`` in index format 2; older entries have no ``pubtime``)."""
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [Release(e["vers"], _date(e.get("pubtime")), bool(e.get("yanked"))) for e in lines]


def sparse_index_path(crate: str) -> str:
    """The file of ``crate`` in cargo's index layout: "1/a", "2/ab", "3/a/abc", "rm/cp/rmcp"."""
    name = crate.lower()
    if len(name) <= 2:
        return f"{len(name)}/{name}"
    if len(name) == 3:
        return f"3/{name[0]}/{name}"
    return f"{name[:2]}/{name[2:4]}/{name}"


def parse_maven_metadata(text: str | bytes) -> list[str]:
    """``maven-metadata.xml``: the ``versioning/versions/version`` list."""
    root = ElementTree.fromstring(text)
    return [v.text.strip() for v in root.iterfind("./versioning/versions/version") if v.text]


def releases(package: str, registry: str, list_argv: list[str]) -> list[Release]:
    """The releases of ``package`` in ``registry`` (recipes.REGISTRIES), oldest first by
    version_key; ``list_argv`` is the recipe's listing command (``{package}`` filled in
    here). Dates are read only where the listing gives them (npm, crates.io); ``release``
    reads one version's date for the others.

    Raises:
        ReleaseError: the listing command or address failed, or printed nothing readable.
    """
    argv = [a.replace("{package}", package) for a in list_argv]
    try:
        if registry == "npm":
            found = parse_npm_time(_run(argv))
        elif registry == "pypi":
            found = [Release(v) for v in parse_pip_index(_run(argv))]
        elif registry == "go":
            found = [Release(v) for v in parse_go_versions(_run(argv))]
        elif registry == "crates":
            found = parse_sparse_index(_get(CRATES_INDEX + sparse_index_path(package)).decode())
        else:
            group, _, artifact = package.partition(":")
            found = [Release(v) for v in parse_maven_metadata(_get(
                f"{MAVEN_CENTRAL}{group.replace('.', '/')}/{artifact}/maven-metadata.xml"))]
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError,
            ElementTree.ParseError) as err:
        raise ReleaseError(f"the {registry} listing of {package} could not be read: {err}") from err
    return sorted(found, key=lambda r: version_key(r.version))


def release(package: str, registry: str, version: str) -> Release:
    """One version with its publication time, read from the registry as the module doc
    says (None for Maven, which gives no dates).

    Raises:
        ReleaseError: the registry does not know the version, or cannot be read.
    """
    if registry == "npm":
        listed = {r.version: r for r in parse_npm_time(_run(["npm", "view", package, "time",
                                                            "--json"]))}
    elif registry == "pypi":
        index = os.environ.get("PIP_INDEX_URL", PYPI_SIMPLE).rstrip("/") + "/"
        name = re.sub(r"[-_.]+", "-", package).lower()
        listed = parse_pep691(_get(f"{index}{name}/", "application/vnd.pypi.simple.v1+json"))
    elif registry == "go":
        info = json.loads(_run(["go", "list", "-m", "-json", f"{package}@{version}"]))
        return Release(info.get("Version", version), _date(info.get("Time")))
    elif registry == "crates":
        listed = {r.version: r for r in releases(package, registry, [])}
    else:
        return Release(version)
    found = listed.get(version) or next((r for v, r in listed.items()
                                         if version_key(v) == version_key(version)), None)
    if found is None:
        raise ReleaseError(f"{registry} has no release {version} of {package}")
    return found
