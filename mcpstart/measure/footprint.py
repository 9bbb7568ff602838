"""What a built server costs on disk and in packages, as design.md's footprint section defines:
artifact bytes, dev tree bytes, dependency count, lock count and tool lines."""

from __future__ import annotations

import fnmatch
import glob
import json
import os
import re
import subprocess
import tomllib
from pathlib import Path

from ..targets.build import Build

NOT_SHIPPED_PYTHON = {"pip", "setuptools", "wheel"}


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


def _npm_lock(lock: Path) -> set[tuple[str, str]]:
    packages = json.loads(lock.read_text())["packages"]
    return {(key.rsplit("node_modules/", 1)[1], meta.get("version", ""))
            for key, meta in packages.items()
            if key.startswith("node_modules/") and not meta.get("dev")}


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
    out = _run(["cargo", "tree", "-e", "normal", "--prefix", "none", "--locked", "--offline"],
               manifest_dir, env)
    crates = [line.split()[:2] for line in out.splitlines() if line.strip()]
    root = tuple(crates[0])
    return {(name, version.lstrip("v")) for name, version in crates[1:] if (name, version) != root}


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv)} exited with code {done.returncode}: "
                           f"{done.stderr.strip()[-300:]}")
    return done.stdout


def shipped_packages(build: Build) -> set[tuple[str, str]]:
    """Packages that ship with the server besides itself, as distinct (name, version) pairs
    (two versions of one package count twice), counted by the
    recipe's method: npm-lock (production entries of package-lock.json), python-venv
    (distributions in the venv but pip/setuptools/wheel), go-binary (modules linked into the
    binary, ``go version -m``), cargo-tree (``cargo tree -e normal`` for the host, deduplicated).

    Raises:
        RuntimeError / OSError / ValueError: the tool or file the method reads failed.
    """
    deps = build.recipe.dependencies
    target = Path(build.expand(deps["target"]))
    method = deps["method"]
    if method == "npm-lock":
        return _npm_lock(target)
    if method == "python-venv":
        return _python_venv(target)
    if method == "go-binary":
        return _go_binary(target, build.environment())
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


def measure_footprint(build: Build, cached: bool) -> tuple[dict, str | None, list[str]]:
    """The footprint block of one built server, its resolved SDK version (None if the SDK
    package was not found among the shipped packages), and warnings.

    Returns:
        ``({artifact_bytes, dev_tree_bytes, dependency_count, lock_count, tool_lines,
        build_s, build_cached}, sdk_version, warnings)``.
    """
    recipe = build.recipe
    warnings = []
    block = {
        "artifact_bytes": tree_bytes([build.expand(p) for p in recipe.artifact_include],
                                     [build.expand(p) for p in recipe.artifact_exclude]),
        "dev_tree_bytes": tree_bytes([str(build.folder)]),
        "dependency_count": None,
        "lock_count": None,
        "tool_lines": tool_lines(recipe.source_dir / recipe.tool_file),
        "build_s": build.build_s,
        "build_cached": cached,
    }
    sdk_version = None
    try:
        block["lock_count"] = lock_count(Path(build.expand(recipe.dependencies["lock"])))
    except (OSError, ValueError, KeyError) as err:
        warnings.append(f"lock count failed: {err}")
    try:
        packages = shipped_packages(build)
        block["dependency_count"] = len(packages)
        sdk_version = next((v for n, v in sorted(packages) if n == recipe.sdk.lower()
                            or n == recipe.sdk), None)
    except (RuntimeError, OSError, ValueError, KeyError) as err:
        warnings.append(f"dependency count failed: {err}")
    if sdk_version and sdk_version.lstrip("v") != recipe.sdk_version.lstrip("v"):
        warnings.append(f"recipe says {recipe.sdk} {recipe.sdk_version}, build has {sdk_version}")
    return block, sdk_version, warnings
