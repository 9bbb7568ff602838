"""How exact is mcpstart's cold-start clock? A tiny C server (compiled here with gcc into a temp
folder) answers `initialize` after a known delay; mcpstart's handshake median minus the
zero-delay median should equal that delay. The zero-delay median is the floor: spawn, pipes
and one line back, the least any server can score.

Usage: python benchmarks/timer_accuracy.py [RUNS]   (prints figures; asserts nothing)
"""

import subprocess
import sys
import tempfile
from pathlib import Path

import statistics

from mcpstart.measure.client import Skips
from mcpstart.measure.cold import cold_start
from mcpstart.measure.settings import Settings
from mcpstart.command import Command

SERVER_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    long delay_us = atol(argv[1]);
    char line[65536];
    if (!fgets(line, sizeof line, stdin)) return 1;
    if (delay_us) usleep(delay_us);
    fputs("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-11-25\","
          "\"capabilities\":{},\"serverInfo\":{\"name\":\"c\",\"version\":\"0\"}}}\n", stdout);
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {}
    return 0;
}
"""
DELAYS_MS = (0, 5, 20, 100)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    with tempfile.TemporaryDirectory() as folder:
        source, binary = Path(folder) / "server.c", Path(folder) / "server"
        source.write_text(SERVER_C)
        subprocess.run(["gcc", "-O2", "-o", str(binary), str(source)], check=True)
        medians = {}
        for delay in DELAYS_MS:
            command = Command([str(binary), str(delay * 1000)])
            skip = Skips({"tools/list": "the test server answers initialize only"})
            settings = Settings(timeout_s=10, pause_ms=50)
            samples = [cold_start(command, settings, skip)["handshake"]
                       for _ in range(3 + runs)][3:]
            median = statistics.median(samples)
            medians[delay] = {"median": median, "min": min(samples),
                              "mad": statistics.median(abs(s - median) for s in samples)}
    floor = medians[0]["median"]
    print(f"{runs} runs after 3 warm-up runs per delay")
    print(f"floor (0 ms server): median {floor:.3f} ms, MAD {medians[0]['mad']:.3f} ms, "
          f"min {medians[0]['min']:.3f} ms")
    for delay in DELAYS_MS[1:]:
        measured = medians[delay]["median"] - floor
        print(f"delay {delay:4d} ms: median - floor = {measured:8.3f} ms "
              f"(error {measured - delay:+.3f} ms; usleep overshoot included)")


if __name__ == "__main__":
    main()
