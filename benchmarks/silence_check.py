"""How long mcpstart stays silent off a terminal: `mcpstart build NAME` into an empty build
cache (a first build; the Rust server's takes minutes), its stdout and stderr read through a
pipe as a CI system reads a job's log, each line stamped by this script's own clock when it
arrives. Prints the lines, the longest gap between two of them (the start and the end
count as lines) and its ratio to the 30 s goal (issue 31; CI systems stop jobs silent for
some minutes). The build cache is a temporary folder, deleted afterwards.

Usage: python benchmarks/silence_check.py [NAME]   (default: rust)
"""

import os
import subprocess
import sys
import tempfile
import time

GOAL_S = 30.0


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "rust"
    with tempfile.TemporaryDirectory(prefix="mcpstart-silence-") as cache:
        start = last = time.monotonic()
        gaps = []
        job = subprocess.Popen([sys.executable, "-c", "from mcpstart.cli import main; main()",
                                "build", name], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "MCPSTART_CACHE_DIR": cache})
        for line in job.stdout:
            now = time.monotonic()
            gaps.append(now - last)
            last = now
            print(f"{now - start:7.1f} s  {line}", end="", flush=True)
        status = job.wait()
        gaps.append(time.monotonic() - last)
    longest = max(gaps)
    print(f"exit status {status}; {len(gaps) - 1} lines over {time.monotonic() - start:.1f} s")
    print(f"longest silence {longest:.1f} s: {longest / GOAL_S:.2f} of the {GOAL_S:g} s goal "
          f"({'met' if longest <= GOAL_S else 'NOT met'}); load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
