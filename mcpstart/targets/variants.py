"""SDK variants of the reference servers: ``--sdk LANG=SPEC`` turns a recipe with a
``[versions]`` table into one recipe per SDK version or local checkout, each built in a
folder of its own and measured beside the default server in the same rounds.

SPEC is a version (``2.1.1``), a comma list, a range ``A..B`` (every release the registry
lists from A to B, pre-releases only with ``pre``), ``latest`` (the newest release), or a path
to a local checkout of the SDK. A variant is named ``LANG@VERSION``, ``LANG@local`` for a path
(``LANG@local-FOLDER`` when a language has several). The recipe's own ``sdk_version``
is the default server when a range or ``latest`` lists it; named outright, it is also
built from the registry like any other release (``LANG@VERSION``, its dependencies
resolved as of its own day), so the release and the committed lock can be told apart.

A variant's recipe is the default's (its server sources those of ``[[versions.sources]]``
for a release below a version whose API differs) with ``[build].steps`` replaced by ``install_version``
(``{package}``, ``{version}`` and ``{date}`` filled in: ``{date}`` is the release's own day,
releases.own_day) or ``install_path`` (``{path}``); its build key adds what it was built
from (targets/build.py ``build_key``), so a checkout's build goes stale when a file in it
changes: the files git lists (tracked, and untracked but not ignored) by path, size and
modification time, or every file of a folder that is not a git checkout.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from . import releases
from .recipes import Recipe

LOCAL = "local"


class VariantError(ValueError):
    """An --sdk value that names no variant: unknown language, a recipe without
    ``[versions]``, a version the registry does not know, a path that is not a folder."""


@dataclass(frozen=True)
class SdkSource:
    """What a server's SDK was built from (results: ``servers[].sdk_source``).

    Attributes:
        kind: "default" (the recipe's own lock), "registry" (a release) or "path" (a local
            checkout).
        package: the SDK as its registry names it.
        version: the release (registry), the recipe's pin (default), None for a path.
        date: the ``{date}`` the build resolved its other dependencies as of, or None.
        path: the checkout (absolute), for kind "path".
        commit: the checkout's HEAD commit, None when it is not a git checkout.
        dirty: the checkout had changes git sees (None when not a git checkout).
        workspace: the checkout's members installed from it (``[versions].workspace``).
        fingerprint: sha256 of the checkout's files' paths, sizes and modification times.
    """

    kind: str
    package: str
    version: str | None = None
    date: str | None = None
    path: str | None = None
    commit: str | None = None
    dirty: bool | None = None
    workspace: tuple[str, ...] = ()
    fingerprint: str | None = None

    def key(self) -> dict:
        """What the build key adds for this source."""
        return {"kind": self.kind, "version": self.version, "date": self.date,
                "path": self.path, "fingerprint": self.fingerprint}

    def record(self) -> dict:
        """The results' ``sdk_source`` block, before the build adds ``lock_sha256`` and
        ``resolved``."""
        return {"kind": self.kind, "package": self.package, "version": self.version,
                "date": self.date, "path": self.path, "commit": self.commit,
                "dirty": self.dirty, "workspace": list(self.workspace)}


def stale_lock(recipe: Recipe, lock: Path) -> bool:
    """True when ``lock`` (a built variant's lock file) does not describe the variant: it is
    absent, or still the default's as committed (the variant's steps resolved without
    writing it: pip installs from the registry or a checkout)."""
    if recipe.sdk_source is None:
        return False
    if not lock.is_file():
        return True
    rel = recipe.dependencies.get("lock", "")
    original = (recipe.source_dir / rel.removeprefix("{src}/")
                if rel.startswith("{src}/") and recipe.source_dir else None)
    try:
        return original is not None and original.read_bytes() == lock.read_bytes()
    except OSError:
        return False


def source_record(recipe: Recipe, lock: Path | None, resolved: list[tuple[str, str]] | None,
                  version: str | None) -> dict | None:
    """``servers[].sdk_source`` of a built recipe: its SdkSource's record (kind "default"
    for a recipe with ``[versions]`` built as written, ``version`` being the SDK version
    found among the shipped packages), ``lock_sha256`` (sha256 of the lock file ``lock``
    after the build; None without one: pass None for a ``stale_lock``) and
    ``resolved`` (the shipped packages as ``[{name, version}]``, None when they could not be
    read). None for a recipe without ``[versions]``."""
    source = recipe.sdk_source
    if source is None:
        if recipe.versions is None:
            return None
        source = SdkSource("default", recipe.versions.package, version or recipe.sdk_version)
    try:
        lock_sha256 = hashlib.sha256(lock.read_bytes()).hexdigest() if lock else None
    except OSError:
        lock_sha256 = None
    return {**source.record(), "lock_sha256": lock_sha256,
            "resolved": None if resolved is None else [{"name": n, "version": v}
                                                       for n, v in sorted(resolved)]}


def parse_sdk_option(text: str) -> tuple[str, str]:
    """``LANG=SPEC`` -> (LANG, SPEC).

    Raises:
        VariantError: no "=", or an empty side.
    """
    lang, sep, spec = text.partition("=")
    if not sep or not lang.strip() or not spec.strip():
        raise VariantError(f"--sdk {text!r}: expected LANG=SPEC (python=2.1.1, "
                           "go=v1.6.0..v1.8.0, rust=latest, typescript=../typescript-sdk)")
    return lang.strip(), spec.strip()


def _is_path(spec: str) -> bool:
    return spec.startswith((".", "/", "~")) or os.sep in spec


def checkout_state(path: Path) -> tuple[str | None, bool | None, str]:
    """(commit, dirty, fingerprint) of a local checkout (module doc); commit and dirty are
    None for a folder that is not a git checkout."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(path), *args], capture_output=True,
                                  timeout=60, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.decode("utf-8", "surrogateescape") if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard") if commit else None
    if listed is not None:
        files = sorted({f for f in listed.split("\0") if f})
    else:
        files = sorted(str(p.relative_to(path)) for p in path.rglob("*")
                       if p.is_file() and ".git" not in p.relative_to(path).parts)
    digest = hashlib.sha256()
    for rel in files:
        try:
            stat = os.stat(path / rel)
        except OSError:  # listed but deleted: a change too
            stat = None
        digest.update(f"{rel}\0{stat and stat.st_size}\0{stat and stat.st_mtime_ns}\0".encode())
    status = git("status", "--porcelain") if commit else None
    return (commit.strip() if commit else None, bool(status.strip()) if status is not None
            else None, digest.hexdigest())


def _same(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and \
        releases.version_key(a) == releases.version_key(b)


def _versions(recipe: Recipe, spec: str, pre: bool) -> list[str]:
    """The versions a SPEC that is not a path names, as the registry spells them."""
    versions = recipe.versions
    if spec == "latest" or ".." in spec:
        listed = [r for r in releases.releases(versions.package, versions.registry,
                                               versions.list_argv)
                  if not r.yanked and (pre or not releases.is_pre(r.version))]
        if spec == "latest":
            if not listed:
                raise VariantError(f"{versions.registry} lists no release of {versions.package}")
            return [listed[-1].version]
        low, _, high = spec.partition("..")
        low_key, high_key = releases.version_key(low), releases.version_key(high)
        chosen = [r.version for r in listed
                  if low_key <= releases.version_key(r.version) <= high_key]
        if not chosen:
            raise VariantError(f"{versions.registry} lists no release of {versions.package} "
                               f"from {low} to {high}" + ("" if pre else " (pre-releases need --pre)"))
        return chosen
    named = [v.strip() for v in spec.split(",") if v.strip()]
    if versions.registry == "go":
        named = [v if v.startswith("v") else f"v{v}" for v in named]
    return named


def _variant(recipe: Recipe, source: SdkSource, name: str) -> Recipe:
    table = recipe.versions
    steps = table.install_path if source.kind == "path" else table.install_version
    fill = {"{package}": table.package, "{version}": source.version or "",
            "{date}": source.date or "", "{path}": source.path or ""}

    def expand(arg: str) -> str:
        for placeholder, value in fill.items():
            arg = arg.replace(placeholder, value)
        return arg

    ranges = sorted(table.sources, key=lambda entry: releases.version_key(entry[0]))
    folder, globs = next(((f, list(g)) for below, f, g in ranges
                          if source.version is not None
                          and releases.version_key(source.version) < releases.version_key(below)),
                         (recipe.source_dir, recipe.sources))
    return replace(recipe, name=name, steps=[[expand(a) for a in step] for step in steps],
                   sdk_version=source.version, sdk_source=source, source_dir=folder,
                   sources=globs)


def variants_of(recipe: Recipe, specs: list[str], pre: bool = False) -> tuple[list[Recipe], list[str]]:
    """The variant recipes of ``recipe`` for its --sdk SPECs (module doc), in version order
    (paths last), and notes (a version that is the default's: module doc).

    Raises:
        VariantError: the recipe has no ``[versions]`` or no steps for the kind asked; a
            path that is not a folder; a ``{date}`` the registry cannot give; a listing
            that fails (releases.ReleaseError's message).
    """
    table = recipe.versions
    if table is None:
        raise VariantError(f"--sdk {recipe.language}: recipe {recipe.path} has no [versions] "
                           "table, so it cannot be built at another SDK version")
    notes, found, paths = [], [], [s for s in specs if _is_path(s)]
    try:
        for spec in [s for s in specs if not _is_path(s)]:
            if not table.install_version:
                raise VariantError(f"--sdk {recipe.language}={spec}: recipe {recipe.path} has "
                                   "no [versions].install_version")
            listed = spec == "latest" or ".." in spec
            for version in _versions(recipe, spec, pre):
                if _same(version, recipe.sdk_version):
                    notes.append(f"--sdk {recipe.language}={version} is the default version: "
                                 + (f"measured as {recipe.name}" if listed else
                                    f"built from {table.registry} as {recipe.name}@{version}, "
                                    f"beside {recipe.name} (the committed lock)"))
                    if listed:
                        continue
                date = None
                if any("{date}" in a for step in table.install_version for a in step):
                    published = releases.release(table.package, table.registry, version).published
                    if published is None:
                        raise VariantError(f"{table.registry} gives no release date for "
                                           f"{table.package} {version}")
                    date = releases.own_day(published)
                found.append(SdkSource("registry", table.package, version, date))
    except releases.ReleaseError as err:
        raise VariantError(f"--sdk {recipe.language}: {err}") from err
    unique = {s.version: s for s in found}
    out = [_variant(recipe, s, f"{recipe.name}@{s.version}")
           for s in sorted(unique.values(), key=lambda s: releases.version_key(s.version))]
    for spec in paths:
        folder = Path(spec).expanduser().resolve()
        if not folder.is_dir():
            raise VariantError(f"--sdk {recipe.language}={spec}: not a folder")
        if not table.install_path:
            raise VariantError(f"--sdk {recipe.language}={spec}: recipe {recipe.path} has no "
                               "[versions].install_path")
        commit, dirty, fingerprint = checkout_state(folder)
        source = SdkSource("path", table.package, path=str(folder), commit=commit, dirty=dirty,
                           workspace=tuple(table.workspace), fingerprint=fingerprint)
        suffix = LOCAL if len(paths) == 1 else f"{LOCAL}-{folder.name}"
        out.append(_variant(recipe, source, f"{recipe.name}@{suffix}"))
    return out, notes


def with_variants(recipes: list[Recipe], options: tuple[str, ...], pre: bool = False
                  ) -> tuple[list[Recipe], list[str]]:
    """``recipes`` with each one's variants after it, for the ``--sdk`` ``options``
    (``LANG=SPEC``, LANG a recipe's language or name; repeatable, SPECs of one language
    joined), and notes.

    Raises:
        VariantError: a bad option, a language no recipe has, or variants_of's errors.
    """
    specs: dict[str, list[str]] = {}
    for option in options:
        lang, spec = parse_sdk_option(option)
        specs.setdefault(lang, []).append(spec)
    known = {r.language for r in recipes if r.versions} | {r.name for r in recipes}
    unknown = [lang for lang in specs if lang not in known]
    if unknown:
        raise VariantError(f"--sdk: no reference server in {', '.join(unknown)}; known: "
                           f"{', '.join(sorted(r.name for r in recipes if r.versions))}")
    out, notes = [], []
    for recipe in recipes:
        out.append(recipe)
        asked = specs.get(recipe.name) or (specs.get(recipe.language) if recipe.versions
                                           else None)
        if asked and recipe.broken is None:  # a broken recipe is a row saying why
            more, said = variants_of(recipe, asked, pre)
            out += more
            notes += said
    return out, notes
