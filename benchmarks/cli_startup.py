"""How long `mcpstart --help` takes against `python -c "import click"` (design goal: at most
1.5x). Prints the medians of N runs each and the ratio. Usage: python benchmarks/cli_startup.py [N]"""

import statistics
import subprocess
import sys
import time

GOAL = 1.5


def median_s(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    click_s = median_s([sys.executable, "-c", "import click"], runs)
    help_s = median_s([sys.executable, "-m", "mcpstart.cli", "--help"], runs)
    ratio = help_s / click_s
    print(f"python -c 'import click': median {click_s * 1000:.1f} ms over {runs} runs")
    print(f"mcpstart --help:          median {help_s * 1000:.1f} ms over {runs} runs")
    print(f"ratio {ratio:.2f} (goal <= {GOAL}): {'met' if ratio <= GOAL else 'NOT met'}")


if __name__ == "__main__":
    main()
