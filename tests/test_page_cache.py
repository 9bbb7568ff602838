"""Cold page cache: eviction and residency on real files, mapped files of a real process, and
the files (library trees included) chosen for eviction."""

import os
import shutil
import subprocess
import sys
import sysconfig
import uuid
from pathlib import Path

import platformdirs
import psutil
import pytest

from mcpstart.measure.page_cache import (PSEUDO_ROOTS, evict, mapped_files, resident_bytes,
                                    server_files)

from conftest import PYTHON_LINE, unavailable

MIB = 1024 * 1024
MEMORY_FILESYSTEMS = {"tmpfs", "ramfs", "devtmpfs", "hugetlbfs"}
"""Filesystems whose files live in the page cache itself: DONTNEED cannot drop their pages."""
READY = "import sys; print('ready', flush=True); sys.stdin.read()"
MAP_AND_WAIT = ("import mmap, sys\n"
                "with open(sys.argv[1], 'rb') as f:\n"
                "    m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n"
                "    m[:]\n"
                "    print('ready', flush=True)\n"
                "    sys.stdin.read()\n")


def filesystem_type(path: Path) -> str:
    """The type of the filesystem holding ``path`` (longest matching mount point)."""
    real = os.path.realpath(path)
    mounts = [p for p in psutil.disk_partitions(all=True)
              if real == p.mountpoint or real.startswith(p.mountpoint.rstrip("/") + "/")]
    return max(mounts, key=lambda p: len(p.mountpoint)).fstype


@pytest.fixture
def disk_dir(tmp_path):
    """A folder on a filesystem where DONTNEED can drop pages: tmp_path, else the user cache
    dir, else the current directory; skips (fails under MCPSTART_REQUIRE_ALL=1) if none."""
    seen = []
    for base in (tmp_path, Path(platformdirs.user_cache_dir("mcpstart")), Path.cwd()):
        try:
            base.mkdir(parents=True, exist_ok=True)
            kind = filesystem_type(base)
        except OSError:
            continue
        seen.append(f"{base}: {kind}")
        if kind in MEMORY_FILESYSTEMS:
            continue
        if base == tmp_path:
            yield base
            return
        folder = base / f"test-cache-{uuid.uuid4().hex}"
        folder.mkdir()
        try:
            yield folder
        finally:
            shutil.rmtree(folder)
        return
    unavailable("no disk filesystem to evict from (" + "; ".join(seen) + ")")


def write(path: Path, size: int, sync: bool = True) -> Path:
    with open(path, "wb") as file:
        file.write(os.urandom(size))
        if sync:
            file.flush()
            os.fsync(file.fileno())
    return path


def read(path: Path) -> None:
    with open(path, "rb") as file:
        while file.read(MIB):
            pass


@pytest.fixture
def child():
    """Start ``python -c CODE ARGS`` and wait for its 'ready' line; stopped at teardown."""
    procs = []

    def start(code: str, *args: str) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        assert proc.stdout.readline() == "ready\n"
        return proc

    yield start
    for proc in procs:
        proc.stdin.close()
        proc.wait(timeout=10)


def test_evict_drops_a_read_file(disk_dir):
    path = write(disk_dir / "data.bin", 4 * MIB + 100)
    read(path)
    assert resident_bytes(str(path)) == 4 * MIB + 100, filesystem_type(disk_dir)
    result = evict([str(path)])
    assert result == {"files": 1, "skipped": 0, "evicted_bytes": 4 * MIB + 100,
                      "resident_bytes": 0, "resident_note": None}
    assert resident_bytes(str(path)) == 0
    read(path)
    assert resident_bytes(str(path)) == 4 * MIB + 100


def test_evict_writes_back_dirty_pages_first(disk_dir):
    path = write(disk_dir / "dirty.bin", 8 * MIB, sync=False)
    result = evict([str(path)])
    assert (result["evicted_bytes"], result["resident_bytes"]) == (8 * MIB, 0)


def test_a_mapped_file_stays_resident_and_the_note_says_why(disk_dir, child):
    mapped, free = write(disk_dir / "mapped.bin", 2 * MIB), write(disk_dir / "free.bin", MIB)
    read(free)
    child(MAP_AND_WAIT, str(mapped))
    result = evict([str(mapped), str(free)])
    assert result["files"] == 2
    assert result["evicted_bytes"] == MIB
    assert result["resident_bytes"] == 2 * MIB
    assert "1 of 2 files" in result["resident_note"]
    assert str(mapped) in result["resident_note"]
    assert "mapped by a running process" in result["resident_note"]


def test_evict_skips_and_counts_what_it_cannot_evict(tmp_path):
    path = write(tmp_path / "small.bin", 10)
    result = evict([str(tmp_path / "gone"), str(tmp_path), "/proc/self/status", str(path)])
    assert (result["files"], result["skipped"]) == (1, 3)


def test_resident_bytes_of_an_empty_and_a_missing_file(tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    assert resident_bytes(str(tmp_path / "empty")) == 0
    with pytest.raises(FileNotFoundError):
        resident_bytes(str(tmp_path / "missing"))


def test_mapped_files_of_a_python_process(child):
    proc = child(READY)
    files = mapped_files(proc.pid)
    assert os.path.realpath(sys.executable) in files
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        library = sysconfig.get_config_var("LDLIBRARY")
        assert any(os.path.basename(f).startswith(library) for f in files), files
    assert len(files) == len(set(files))
    assert all(os.path.isfile(f) and not f.startswith(PSEUDO_ROOTS) for f in files)


def test_mapped_files_of_a_process_that_has_gone():
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    with pytest.raises(ProcessLookupError):
        mapped_files(int(proc.stdout))


def stdlib() -> Path:
    return Path(os.path.realpath(sysconfig.get_paths()["stdlib"]))


def test_server_files_of_python_include_its_standard_library():
    files = server_files(sys.executable, [], [])
    assert files[0] == os.path.realpath(sys.executable)
    for module in ("os.py", "json/__init__.py", "encodings/utf_8.py"):
        assert str(stdlib() / module) in files
    assert any(f.startswith(str(stdlib() / "lib-dynload") + "/") for f in files)
    assert not any(f.startswith((str(stdlib() / "test") + "/", str(stdlib() / "site-packages")))
                   for f in files)
    assert len(files) == len(set(files))


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    folder = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    site = next(folder.glob("lib/python*/site-packages"))
    (site / "server_dep.py").write_text("x = 1\n")
    return folder


def test_server_files_of_a_venv_python_include_its_site_packages(venv):
    files = server_files(str(venv / "bin" / "python"), [], [])
    assert str(next(venv.glob("lib/python*/site-packages/server_dep.py"))) in files
    assert str(stdlib() / "os.py") in files


def test_server_files_follow_a_scripts_interpreter(venv, tmp_path, monkeypatch):
    direct, via_env = tmp_path / "direct", tmp_path / "via-env"
    direct.write_text(f"#!{venv}/bin/python\nprint(1)\n")
    via_env.write_text("#!/usr/bin/env -S python -u\nprint(1)\n")
    monkeypatch.setenv("PATH", f"{venv}/bin")
    dep = str(next(venv.glob("lib/python*/site-packages/server_dep.py")))
    for script in (direct, via_env):
        files = server_files(str(script), [], [])
        assert files[:2] == [str(script), os.path.realpath(venv / "bin" / "python")]
        assert dep in files and str(stdlib() / "os.py") in files


def test_server_files_walk_artifacts_and_keep_mapped_regular_files(tmp_path):
    (tmp_path / "app" / "sub").mkdir(parents=True)
    binary = write(tmp_path / "app" / "server", 10)
    data = write(tmp_path / "app" / "sub" / "data.json", 10)
    (tmp_path / "app" / "link").symlink_to(data)
    lib = write(tmp_path / "libfoo.so", 10)
    files = server_files(str(binary), [str(tmp_path / "app")],
                         [str(lib), str(lib), "/proc/self/status", str(tmp_path / "gone.so")])
    assert files == [str(binary), str(data), str(lib)]


def test_server_files_of_a_node_package_executable(tmp_path):
    package = tmp_path / "lib" / "node_modules" / "@scope" / "tool"
    (package / "bin").mkdir(parents=True)
    (package / "lib").mkdir()
    (package / "bin" / "cli.js").write_text("#!/usr/bin/env node\n")
    (package / "lib" / "main.js").write_text("")
    write(tmp_path / "lib" / "node_modules" / "other.js", 1)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "tool").symlink_to(package / "bin" / "cli.js")
    files = server_files(str(tmp_path / "bin" / "tool"), [], [])
    assert str(package / "lib" / "main.js") in files
    assert str(tmp_path / "lib" / "node_modules" / "other.js") not in files
    node = shutil.which("node")
    assert (os.path.realpath(node) in files) if node else len(files) == 2


@pytest.mark.parametrize("program, tree", [("java", "lib"), ("ruby", "lib/ruby")])
def test_server_files_of_java_and_ruby_include_their_library_tree(tmp_path, program, tree):
    (tmp_path / "bin").mkdir()
    write(tmp_path / "bin" / program, 10)
    (tmp_path / tree / "inner").mkdir(parents=True)
    library = write(tmp_path / tree / "inner" / "library", 10)
    write(tmp_path / "outside", 10)
    files = server_files(str(tmp_path / "bin" / program), [], [])
    assert files == [str(tmp_path / "bin" / program), str(library)]


def test_a_server_whose_cold_cache_start_fails_runs_no_uncached_cold_starts(tmp_path):
    """The start that learns the mapped files fails; later starts would answer. Runs with
    nothing evicted must not be recorded under --cache-state cold."""
    import json

    from click.testing import CliRunner

    from conftest import FAKE
    from mcpstart.cli import main

    marker, out = tmp_path / "started-once", tmp_path / "r.json"
    script = f'test -e {marker} || {{ touch {marker}; exit 1; }}; exec {PYTHON_LINE} {FAKE}'
    result = CliRunner().invoke(main, ["measure", "--runs", "1", "--warmup", "0", "--cache-state",
                                       "cold", "-o", str(out), "--", "sh", "-c", script])
    assert result.exit_code == 1, result.output
    row = json.loads(out.read_text())["servers"][0]
    assert row["status"] == "failed" and "exited with code 1" in row["reason"]
    assert json.loads(out.read_text())["run_sequence"] == []
