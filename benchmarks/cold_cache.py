"""Does `--cache-state cold` make a start read its files again? For a tiny C program, a Go
program (when `go` is on PATH) and the Python interpreter, each waiting for stdin's end: the
bytes resident before and after eviction, the time eviction takes, and spawn-to-exit times of
cold starts (evict first) against warm starts (files left in the page cache), interleaved.
Each start's block reads (ru_inblock, 512-byte units) and major page faults come from wait4.

Usage: python benchmarks/cold_cache.py [RUNS]   (prints figures; asserts nothing)
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcpstart.measure.page_cache import evict, mapped_files, resident_bytes, server_files

C_PROGRAM = r"""
#include <stdio.h>
int main(void) { char line[4096]; puts("ready"); fflush(stdout);
                 while (fgets(line, sizeof line, stdin)) {} return 0; }
"""
GO_PROGRAM = """package main
import ("bufio"; "fmt"; "os")
func main() { fmt.Println("ready"); s := bufio.NewScanner(os.Stdin); for s.Scan() {} }
"""
PYTHON_ARGS = ["-c", "import sys; print('ready', flush=True); sys.stdin.read()"]


def programs(folder: Path) -> list[tuple[str, list[str]]]:
    """(label, argv) of the programs to start, building the C and Go ones into ``folder``."""
    (folder / "tiny.c").write_text(C_PROGRAM)
    subprocess.run(["gcc", "-O2", "-o", str(folder / "tiny-c"), str(folder / "tiny.c")],
                   check=True)
    found = [("C (gcc -O2, dynamic)", [str(folder / "tiny-c")])]
    if shutil.which("go"):
        (folder / "main.go").write_text(GO_PROGRAM)
        subprocess.run(["go", "build", "-o", str(folder / "tiny-go"), "main.go"], cwd=folder,
                       check=True)
        found.append(("Go (go build)", [str(folder / "tiny-go")]))
    found.append((f"Python {sys.version.split()[0]} -c", [os.path.realpath(sys.executable),
                                                         *PYTHON_ARGS]))
    return found


def start(argv: list[str]) -> tuple[float, int, int]:
    """Spawn ``argv`` with stdin at its end; (ms from spawn to exit, blocks read, major
    faults)."""
    begin = time.perf_counter_ns()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = (time.perf_counter_ns() - begin) / 1e6
    proc.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, usage.ru_inblock, usage.ru_majflt


def files_of(argv: list[str]) -> list[str]:
    """server_files of ``argv`` with the files a live (warm) instance maps."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()
    mapped = mapped_files(proc.pid)
    proc.stdin.close()
    proc.wait()
    return server_files(argv[0], [], mapped)


def describe(label: str, rows: list[tuple[float, int, int]]) -> str:
    times = [row[0] for row in rows]
    return (f"  {label}: median {statistics.median(times):7.2f} ms  min {min(times):7.2f}  "
            f"max {max(times):7.2f}  | blocks read median {statistics.median(r[1] for r in rows):g}"
            f", major faults median {statistics.median(r[2] for r in rows):g}")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    with tempfile.TemporaryDirectory(dir=Path.home() / ".cache") as folder:
        for label, argv in programs(Path(folder)):
            files = files_of(argv)
            for _ in range(2):
                start(argv)
            before = sum(resident_bytes(path) for path in files)
            evicting = time.perf_counter()
            result = evict(files)
            evict_ms = (time.perf_counter() - evicting) * 1000
            print(f"{label}: {result['files']} files ({result['skipped']} skipped), "
                  f"{sum(os.path.getsize(p) for p in files) / 1e6:.1f} MB on disk")
            print(f"  warm page cache: {before / 1e6:.2f} MB resident; eviction took "
                  f"{evict_ms:.1f} ms, evicted {result['evicted_bytes'] / 1e6:.2f} MB, "
                  f"{result['resident_bytes'] / 1e6:.2f} MB still resident")
            if result["resident_note"]:
                print(f"  note: {result['resident_note']}")
            cold, warm, evicted = [], [], []
            for _ in range(runs):
                evicted.append(evict(files)["evicted_bytes"])
                cold.append(start(argv))
                warm.append(start(argv))
            print(f"  {runs} runs, interleaved; bytes evicted before each cold start: median "
                  f"{statistics.median(evicted) / 1e6:.2f} MB")
            print(describe("cold page cache", cold))
            print(describe("warm page cache", warm))
            print("  cold ms: " + " ".join(f"{row[0]:.1f}" for row in cold))
            print("  warm ms: " + " ".join(f"{row[0]:.1f}" for row in warm))


if __name__ == "__main__":
    main()
