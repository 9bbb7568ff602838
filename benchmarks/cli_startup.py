"""How long the installed `mcpstart --help` (the console script pip wrote) takes against
`python -c "import click"` with the same interpreter (the goal: at most 1.3x). Prints the
medians of N runs each, interleaved, and the ratio.
Usage: python benchmarks/cli_startup.py [N]"""

import os
import shutil
import statistics
import subprocess
import sys
import time

GOAL = 1.3


def seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    script = shutil.which("mcpstart", path=os.path.dirname(sys.executable)) or \
        shutil.which("mcpstart")
    if script is None:
        sys.exit("no mcpstart console script: python3 -m pip install . first")
    pairs = [(seconds([sys.executable, "-c", "import click"]), seconds([script, "--help"]))
             for _ in range(runs)]
    click_s = statistics.median(c for c, _ in pairs)
    help_s = statistics.median(h for _, h in pairs)
    ratio = help_s / click_s
    print(f"python -c 'import click': median {click_s * 1000:.1f} ms over {runs} runs")
    print(f"{script} --help: median {help_s * 1000:.1f} ms over {runs} runs")
    print(f"ratio {ratio:.2f} (goal <= {GOAL}): {'met' if ratio <= GOAL else 'NOT met'}")


if __name__ == "__main__":
    main()
