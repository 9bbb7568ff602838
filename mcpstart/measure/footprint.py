"""What a built server costs on disk and in packages, as docs/results.md#footprint defines:
artifact bytes, dev tree bytes, dependency count, lock count, tool lines and debug info."""

from __future__ import annotations

import fnmatch
import glob
import json
import os
import re
import subprocess
import tempfile
import tomllib
from pathlib import Path

from .. import warnings as warn
from ..targets.build import Build, tree_bytes

KEYS = ("artifact_bytes", "dev_tree_bytes", "dependency_count", "lock_count", "tool_lines",
        "build_s", "build_cached", "debug_info", "sections")
NOT_SHIPPED_PYTHON = {"pip", "setuptools", "wheel"}


def _npm_installed(node_modules: Path) -> set[tuple[str, str]]:
    """The installed tree as npm records it in ``node_modules/.package-lock.json`` (rewritten
    by every install and prune): packages of other platforms that were not installed are not
    there, unlike in package-lock.json. Entries flagged ``dev`` (no prune) are left out."""
    packages = json.loads((node_modules / ".package-lock.json").read_text())["packages"]
    return {(key.rsplit("node_modules/", 1)[1], meta.get("version", ""))
            for key, meta in packages.items()
            if "node_modules/" in key and not meta.get("dev")}


def _python_venv(venv: Path) -> set[tuple[str, str]]:
    from importlib import metadata

    found = set()
    sites = list(venv.glob("lib/python*/site-packages"))
    if not sites:
        raise FileNotFoundError(f"no site-packages under {venv}")
    for site in sites:
        for dist in metadata.distributions(path=[str(site)]):
            name = re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()
            if name not in NOT_SHIPPED_PYTHON:
                found.add((name, dist.version))
    return found


def _go_binary(binary: Path, env: dict[str, str]) -> set[tuple[str, str]]:
    out = _run(["go", "version", "-m", str(binary)], binary.parent, env)
    return {(parts[1], parts[2]) for line in out.splitlines()
            if (parts := line.split()) and parts[0] == "dep" and len(parts) >= 3}


def _cargo_tree(manifest_dir: Path, env: dict[str, str]) -> set[tuple[str, str]]:
    host = re.search(r"^host: (\S+)", _run(["rustc", "-vV"], manifest_dir, env), re.M)
    if not host:
        raise RuntimeError("rustc -vV names no host triple")
    out = _run(["cargo", "tree", "-e", "normal,no-proc-macro", "--target", host.group(1),
                "--prefix", "none", "--locked", "--offline"], manifest_dir, env)
    return parse_cargo_tree(out)


def parse_cargo_tree(out: str) -> set[tuple[str, str]]:
    """Distinct (crate, version) pairs of ``cargo tree --prefix none`` output, the root (the
    first line) left out; a crate listed again (marked ``(*)``) counts once."""
    crates = [tuple(line.split()[:2]) for line in out.splitlines() if line.strip()]
    return {(name, version.lstrip("v")) for name, version in crates[1:] if (name, version) != crates[0]}


def _maven(project: Path, env: dict[str, str]) -> set[tuple[str, str]]:
    argv = ["mvn", "-o", "-B", "-q", "dependency:list", "-DincludeScope=runtime"]
    with tempfile.TemporaryDirectory(prefix="mcpstart-mvn-") as scratch:
        listing = Path(scratch) / "dependencies.txt"
        done = subprocess.run([*argv, f"-DoutputFile={listing}"], cwd=project, env=env,
                              capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)
        if done.returncode:  # Maven says why on stdout, in its first non-empty [ERROR] line
            errors = [line.split("[ERROR]", 1)[1].strip() for line in done.stdout.splitlines()
                      if "[ERROR]" in line]
            raise RuntimeError(f"{' '.join(argv)} exited with code {done.returncode}: "
                               f"{next((e for e in errors if e), '')[:300]}")
        return parse_maven_list(listing.read_text())


def parse_maven_list(out: str) -> set[tuple[str, str]]:
    """Distinct (``groupId:artifactId[:classifier]``, version) pairs of the file ``mvn
    dependency:list -DoutputFile=...`` writes: one ``group:artifact:type[:classifier]:version:scope``
    per line, after a header, each maybe followed by `` -- module NAME [auto]``
    (maven-dependency-plugin 3.x)."""
    found = set()
    for line in out.splitlines():
        parts = line.split(" -- ")[0].strip().split(":")
        if len(parts) in (5, 6):  # group, artifact and the classifier where there is one
            found.add((":".join(parts[:2] + parts[3:-2]), parts[-2]))
    return found


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv)} exited with code {done.returncode}: "
                           f"{done.stderr.strip()[-300:]}")
    return done.stdout


def shipped_packages(build: Build) -> set[tuple[str, str]]:
    """Packages that ship with the server besides itself, as distinct (name, version) pairs
    (two versions of one package count twice), counted by the recipe's method:
    npm-installed (the installed production tree, ``node_modules/.package-lock.json``),
    python-venv (distributions in the venv but pip/setuptools/wheel), go-binary (modules
    linked into the binary, ``go version -m``), cargo-tree (``cargo tree -e
    normal,no-proc-macro --target <host>``: crates compiled into the binary for the host,
    without proc-macro and build-only crates), maven (the compile and runtime scope of the
    project in ``target``, as ``mvn -o dependency:list -DincludeScope=runtime`` resolves it
    offline with the build's environment, so a ``-Dmaven.repo.local`` in ``MAVEN_OPTS``
    reads the build's own local repository, which must hold maven-dependency-plugin (a pom
    that uses it, as servers/java does); named ``groupId:artifactId``), none (nothing).

    Raises:
        RuntimeError / OSError / ValueError / KeyError: the tool or file the method reads failed.
    """
    deps = build.recipe.dependencies
    method = deps["method"]
    if method == "none":
        return set()
    target = Path(build.path(deps["target"]))
    if method == "npm-installed":
        return _npm_installed(target)
    if method == "python-venv":
        return _python_venv(target)
    if method == "go-binary":
        return _go_binary(target, build.environment())
    if method == "maven":
        return _maven(target, build.environment())
    return _cargo_tree(target, build.environment())


def lock_count(lock: Path) -> int:
    """Entries in a lock file, the server's own package left out: package-lock.json
    ("packages" but the root), Cargo.lock ([[package]] with a source), go.sum (distinct
    module@version), requirements.txt (``name==version`` lines).

    Raises:
        ValueError: a lock file of a kind not listed above.
    """
    if lock.name == "package-lock.json":
        return sum(1 for key in json.loads(lock.read_text())["packages"] if key)
    if lock.name == "Cargo.lock":
        return sum(1 for p in tomllib.loads(lock.read_text())["package"] if "source" in p)
    text = lock.read_text()
    if lock.name == "go.sum":
        return len({(parts[0], parts[1].removesuffix("/go.mod"))
                    for line in text.splitlines() if len(parts := line.split()) >= 2})
    if lock.suffix == ".txt":
        return len(re.findall(r"^[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?==", text, re.M))
    raise ValueError(f"unknown lock file kind: {lock}")


def tool_lines(path: Path) -> int:
    """Non-blank, non-comment lines of one source file: ``#`` comments for Python, ``//`` and
    ``/* */`` comments for the C-like languages."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".py":
        lines = [l for l in text.splitlines() if not l.strip().startswith("#")]
    else:
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        lines = [l for l in text.splitlines() if not l.strip().startswith("//")]
    return sum(1 for l in lines if l.strip())


def artifact_files(build: Build) -> list[str]:
    """The files the ``[artifact]`` include globs name directly (not those inside a named
    folder), excluded ones left out: a native server's binaries."""
    recipe = build.recipe
    exclude = [build.path(p) for p in recipe.artifact_exclude]
    return sorted(path for pattern in recipe.artifact_include
                  for path in glob.glob(build.path(pattern))
                  if os.path.isfile(path) and not any(fnmatch.fnmatch(path, e) for e in exclude))


def elf_sections(paths: list[str]) -> dict[str, int] | None:
    """The sections of the ELF files among ``paths``, by name, their sizes summed over the
    files (``sh_size`` in bytes: a ``.bss`` section's is the memory it takes, not file bytes),
    largest first; None if no path is an ELF file (an interpreted server's source, a script).

    Read with pyelftools, a maintained pure-Python ELF reader, rather than by hand: section
    names sit in a string table that only the section headers locate, in either word size
    and byte order.

    Raises:
        ValueError: a file starts like an ELF file but cannot be parsed.
    """
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    found = None
    for path in paths:
        with open(path, "rb") as file:
            if file.read(4) != b"\x7fELF":
                continue
            file.seek(0)
            found = found or {}
            try:
                for section in ELFFile(file).iter_sections():
                    if section.name and section["sh_size"]:
                        found[section.name] = found.get(section.name, 0) + section["sh_size"]
            except ELFError as err:
                raise ValueError(f"{path}: not a readable ELF file: {err}") from err
    return None if found is None else dict(sorted(found.items(), key=lambda kv: -kv[1]))


def debug_info(sections: dict[str, int]) -> bool:
    """Whether ELF ``sections`` (elf_sections) carry DWARF debug information: a
    ``.debug_info`` section (or ``.zdebug_info``, the old compressed form)."""
    return any(name in sections for name in (".debug_info", ".zdebug_info"))


def measure_footprint(build: Build, cached: bool) -> tuple[dict, str | None, list[dict]]:
    """The footprint block of one server that is ready to spawn (``build.ok``), its resolved
    SDK version (None if the recipe names no SDK or the SDK package was not found among the
    shipped packages), and warnings.

    Returns:
        ``({artifact_bytes, dev_tree_bytes, dependency_count, lock_count, tool_lines,
        build_s, build_cached, debug_info, sections, not_measured, packages}, sdk_version,
        warnings)`` (``sections``: elf_sections of the artifact's files)
        (``packages``: the shipped (name, version) pairs, absent when not counted). A figure
        that does not apply (the recipe has no ``[build]``, ``[artifact]``,
        ``[dependencies]``, lock file or ``tool_file``; no ELF file for ``debug_info``) is
        None with the reason in ``not_measured`` ({key: reason}: "n/a" in tables); a figure
        that is None but not listed there could not be counted, and a warning
        ``{kind: "footprint", metric: "footprint.<key>", detail}`` says why.
    """
    recipe, deps = build.recipe, build.recipe.dependencies
    block: dict = dict.fromkeys(KEYS)
    not_measured: dict[str, str] = {}
    warnings: list[dict] = []

    def attempt(key: str, how) -> bool:
        """Set ``block[key] = how()``; False (and a warning) when what it reads failed."""
        try:
            block[key] = how()
            return True
        except (RuntimeError, OSError, ValueError, KeyError, subprocess.TimeoutExpired) as err:
            warnings.append(warn.footprint_uncounted(key, err))
            return False

    def absent(keys: tuple[str, ...], reason: str) -> None:
        not_measured.update(dict.fromkeys(keys, reason))

    if build.folder is None:
        absent(("dev_tree_bytes", "build_s", "build_cached"), "the recipe has no [build]")
    else:
        block.update(dev_tree_bytes=build.dev_tree_bytes, build_s=build.build_s,
                     build_cached=cached)

    if not recipe.artifact_include:
        absent(("artifact_bytes", "debug_info", "sections"), "the recipe has no [artifact]")
    else:
        attempt("artifact_bytes", lambda: tree_bytes(
            [build.path(p) for p in recipe.artifact_include],
            [build.path(p) for p in recipe.artifact_exclude]))
        if attempt("sections", lambda: elf_sections(artifact_files(build))):
            if block["sections"] is None:
                absent(("debug_info", "sections"),
                       "no ELF file in the artifact (an interpreted server)")
            else:
                block["debug_info"] = debug_info(block["sections"])

    if recipe.tool_file:
        attempt("tool_lines", lambda: tool_lines(recipe.source_dir / recipe.tool_file))
    else:
        absent(("tool_lines",), "the recipe names no tool_file")

    sdk_version = None
    if not deps:
        absent(("dependency_count", "lock_count"), "the recipe has no [dependencies]")
    else:
        if "lock" in deps:
            attempt("lock_count", lambda: lock_count(Path(build.path(deps["lock"]))))
        else:
            absent(("lock_count",), "the recipe names no lock file")
        if attempt("dependency_count", lambda: shipped_packages(build)):
            packages = block["dependency_count"]
            block["dependency_count"] = len(packages)
            block["packages"] = sorted(packages)
            sdk_version = next((v for n, v in sorted(packages)
                                if recipe.sdk and n in (recipe.sdk, recipe.sdk.lower())), None)
    if sdk_version and recipe.sdk_version and sdk_version.lstrip("v") != recipe.sdk_version.lstrip("v"):
        warnings.append(warn.sdk_version(recipe.sdk, recipe.sdk_version, sdk_version))
    block["not_measured"] = not_measured
    return block, sdk_version, warnings
