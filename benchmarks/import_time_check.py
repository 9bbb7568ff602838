"""Is mcpstart's attributed import time (``imports.import_ms``: the import tree of a profiled
start, past the interpreter's own imports) what importing the server costs without the
profiler? For each built Python reference server (a script run by its virtual environment's
interpreter), each round makes one profiled start through mcpstart (profiled_start
and imports.attribute) and times ``python -c 'import <the server's module>'`` and ``python -c
pass`` in the server's environment and folder (wall time of the process, spawn to exit; each
ends with ``os._exit(0)``, QUIT),
alternating their order round by round; the independent figure is the difference of the two
medians.

Prints both figures, their ratio and the target: within 20%. Also prints the top three
distributions of the last profiled start. Asserts nothing.

``--compare OLD NEW`` (two built servers, e.g. ``python@2.2.0 python``) is the hand check of
``mcpstart compare``'s "what changed in the start": ``python -X importtime -c 'import
<module>'`` in each server's environment, OLD and NEW alternating (order swapped round by
round), ``--rounds`` each (7 by default here, as ``measure --sdk``'s profiled starts), read
by this script's own parser (the subtree of the server module's import, summed per
distribution by the environment's ``importlib.metadata.packages_distributions()``: self time
of every module, as compare ranks them, and cumulative time of the outermost module of each
run of one distribution); the medians' largest self-time differences with the exact
two-sided p over the rounds, adjusted over the distributions of both sides (the statistics
are compare's, start_change.family; the runs and the parser are not); the first difference
by compare's rule (the largest with adjusted p <= 0.1 that moved more than ``--threshold``,
10%, and 1% of the whole import; else "inconclusive" with the largest change and its p);
the distributions imported on one side only; and with ``--results FILE`` (holding both
servers) mcpstart compare's first difference and whether the two agree (both name the same
distribution, or both are inconclusive).

Usage: python benchmarks/import_time_check.py [--rounds 7] [--cache-dir DIR] [--sdk LANG=SPEC]
           [NAMES...]
       python benchmarks/import_time_check.py --compare OLD NEW [--results FILE] [--sdk ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import time
from pathlib import Path

from mcpstart.measure import imports
from mcpstart.measure.profiled import profiled_start
from mcpstart.measure.settings import Settings
from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import load_recipes
from mcpstart.targets.variants import with_variants
from mcpstart.views.start_change import RELEVANT_SHARE, family
from mcpstart.transports.tree import child_subreaper

HERE = Path(__file__).parent


def wall_ms(argv: list[str], cwd: str, env: dict) -> float:
    start = time.perf_counter_ns()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter_ns() - start) / 1e6


QUIT = "; import os; os._exit(0)"
"""Ends both timed commands without the interpreter's teardown, which frees every imported
module at a normal exit (Python docs, os._exit): that is not import time, and it grows with
what was imported (about 0.3-0.5 s of mcp 2.1.1's 2-3 s at a load of 4 on 2 cores)."""
LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)")
OWNERS = ("import importlib.metadata as m, json, sys; "
          "print(json.dumps([m.packages_distributions(), sorted(sys.stdlib_module_names)]))")
OWN = "(not installed)"


def per_distribution(text: str, module: str, owners: dict, stdlib: set) -> dict[str, dict]:
    """-X importtime output read by hand: the lines of ``module``'s own import (the last
    top-level line of that name and the deeper lines listed before it), each line's top-level
    package's distribution (``owners``; else "(standard library)" when in ``stdlib`` or
    private, else OWN: the server's code); per distribution the sum
    of self µs and of the cumulative µs of each line whose parent (the next shallower line
    after it) belongs to another distribution, in ms."""
    lines = [(len(m[3]) // 2, m[4], int(m[1]), int(m[2]))
             for m in map(LINE.match, text.splitlines()) if m]
    end = max(i for i, line in enumerate(lines) if line[0] == 0 and line[1] == module)
    start = max((i + 1 for i, line in enumerate(lines[:end]) if line[0] == 0), default=0)
    tree = lines[start:end + 1]
    def owner(name: str) -> str:
        top = name.split(".")[0]
        if owners.get(top):
            return owners[top][0]
        return "(standard library)" if top in stdlib or top.startswith("_") else OWN

    sums: dict[str, dict] = {}
    for i, (depth, name, self_us, cumulative_us) in enumerate(tree):
        parent = next((n for d, n, *_ in tree[i + 1:] if d < depth), None)
        entry = sums.setdefault(owner(name), {"self": 0.0, "cumulative": 0.0})
        entry["self"] += self_us / 1000
        if parent is None or owner(parent) != owner(name):
            entry["cumulative"] += cumulative_us / 1000
    return sums


def compare_by_hand(recipes, args) -> None:
    """The --compare mode (module doc)."""
    sides = []
    for name in args.compare:
        (recipe,) = [r for r in recipes if r.name == name]
        command = ensure_built(recipe, cache_root(args.cache_dir)).command()
        python, script = command.argv[0], Path(command.argv[1])
        folder, env = str(script.parent), command.environment()
        owners, stdlib = json.loads(subprocess.run([python, "-c", OWNERS], cwd=folder, env=env,
                                           capture_output=True, text=True, check=True).stdout)
        sides.append({"name": name, "argv": [python, "-X", "importtime", "-c",
                                            f"import {script.stem}"],
                      "module": script.stem, "cwd": folder, "env": env, "owners": owners,
                      "stdlib": set(stdlib),
                      "runs": []})
    for index in range(args.rounds):
        for side in sides if index % 2 == 0 else sides[::-1]:
            done = subprocess.run(side["argv"], cwd=side["cwd"], env=side["env"],
                                  capture_output=True, text=True, check=True)
            side["runs"].append(per_distribution(done.stderr, side["module"], side["owners"],
                                                side["stdlib"]))
    old, new = sides
    medians = [{n: {k: statistics.median(r.get(n, {}).get(k, 0.0) for r in side["runs"])
                    for k in ("self", "cumulative")}
                for n in {n for r in side["runs"] for n in r}} for side in sides]
    pairs = {n: tuple([r.get(n, {}).get("self", 0.0) for r in side["runs"]] for side in sides)
             for n in medians[0] if n in medians[1]}
    whole = medians[0][OWN]["cumulative"]
    changes = family(pairs, args.threshold, RELEVANT_SHARE * whole)
    print(f"-X importtime by hand, {args.rounds} rounds each, alternating: {old['name']} -> "
          f"{new['name']} (median ms of self time, as compare; cumulative beside; {OWN}'s "
          f"cumulative, the whole import: {whole:.1f} -> {medians[1][OWN]['cumulative']:.1f}; "
          f"p adjusted over the {len(changes)} distributions of both, as compare)")
    for c in changes[:5]:
        n = c["name"]
        print(f"  {n}: {c['old_ms']:.1f} -> {c['new_ms']:.1f} ({c['change_ms']:+.1f}, "
              f"{c['change_ms'] / c['old_ms']:+.0%}, p = {c['p']:.2g}, {c['p_raw']:.2g} alone; "
              f"cumulative {medians[1][n]['cumulative'] - medians[0][n]['cumulative']:+.1f})"
              + (" beyond noise" if c["changed"] else ""))
    for word, mine, other in (("added", medians[1], medians[0]),
                              ("gone", medians[0], medians[1])):
        only = sorted((n for n in mine if n not in other), key=lambda n: -mine[n]["self"])
        print(f"  {word} (self): " + (", ".join(f"{n} {mine[n]['self']:.1f}" for n in only)
                                      or "none"))
    by_hand = first(changes, len(changes))
    print(f"  by hand, first difference: {by_hand}")
    if args.results:
        from mcpstart.views.compare import compare, variant_pair

        doc = json.loads(Path(args.results).read_text())
        (found,) = compare(*variant_pair(doc, *args.compare), same_run=True).start_changes
        block = found["imports"] or {}
        named = block.get("distributions") or []
        theirs = first(named or [c for c in [block.get("largest")] if c],
                       block.get("family", 0))
        print(f"  mcpstart compare ({block.get('n_old')} vs {block.get('n_new')} profiled "
              f"starts), first difference: {theirs}")
        print(f"  first agrees: {verdict_agrees(by_hand, theirs)}")


def first(changes: list[dict], tested: int) -> str:
    """The first difference as the noise rule names it: the largest change beyond noise,
    else "inconclusive" with the largest change and its p; "none tested" without any."""
    named = [c for c in changes if c["changed"]]
    if named:
        c = named[0]
        return f"{c['name']} ({c['change_ms']:+.1f} ms, p = {c['p']:.2g} over {tested})"
    if not changes:
        return "none tested"
    c = changes[0]
    return (f"inconclusive (p = {c['p']:.2g} over {tested}; the largest, {c['name']} "
            f"{c['change_ms']:+.1f} ms, {c['p_raw']:.2g} alone)")


def verdict_agrees(mine: str, theirs: str) -> str:
    """"yes" when both name the same distribution or both are inconclusive, else "NO" (an
    inconclusive side against a named one says which)."""
    words = mine.split()[0], theirs.split()[0]
    if words[0] == words[1]:
        return "yes" + (" (both inconclusive)" if words[0] == "inconclusive" else "")
    if "inconclusive" in words:
        return "NO: " + ("by hand" if words[0] == "inconclusive" else "mcpstart") + \
            " is inconclusive where the other names one"
    return "NO"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--cache-dir")
    parser.add_argument("--sdk", action="append", default=[],
                        help="LANG=SPEC: SDK variants, as measure --sdk")
    parser.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"))
    parser.add_argument("--results", help="with --compare: the results file holding both")
    parser.add_argument("--threshold", type=float, default=10.0,
                        help="with --compare: compare's time threshold, percent")
    parser.add_argument("names", nargs="*", default=["python"])
    args = parser.parse_args()
    args.rounds = args.rounds or 7
    print(f"{args.rounds} rounds, alternating; load average at start "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}, {os.cpu_count()} cores")
    recipes, _notes = with_variants(load_recipes(HERE.parent / "build-recipes"),
                                    tuple(args.sdk))
    if args.compare:
        compare_by_hand(recipes, args)
        return
    for recipe in [r for r in recipes if r.name in args.names]:
        build = ensure_built(recipe, cache_root(args.cache_dir))
        if not build.ok:
            print(f"{recipe.name}: not built: {build.reason}")
            continue
        command = build.command()
        python, script = command.argv[0], Path(command.argv[1])
        folder, env = str(script.parent), command.environment()
        importing = [python, "-c", f"import {script.stem}" + QUIT]
        nothing = [python, "-c", "pass" + QUIT]
        attributed, with_import, bare, env_info = [], [], [], None
        with child_subreaper():
            for index in range(args.rounds):
                checks = [(importing, with_import), (nothing, bare)]
                for argv, into in checks if index % 2 else checks[::-1]:
                    into.append(wall_ms(argv, folder, env))
                _ms, text, interpreter = profiled_start(command, Settings(timeout_s=60),
                                                        imports.ENV, imports.python_interpreter)
                env_info = env_info or imports.environment_of(interpreter, 60)
                found = imports.attribute(imports.parse(text), env_info)
                attributed.append(found)
        mine = statistics.median(a["import_ms"] for a in attributed)
        theirs = statistics.median(with_import) - statistics.median(bare)
        ratio = mine / theirs
        print(f"{recipe.name}: attributed {mine:.1f} ms; import {script.stem} minus pass "
              f"{theirs:.1f} ms (medians {statistics.median(with_import):.1f} - "
              f"{statistics.median(bare):.1f}); ratio {ratio:.3f}; target within 20%: "
              f"{'met' if abs(ratio - 1) <= 0.2 else 'NOT met'}")
        top = sorted(((name, d) for name, d in attributed[-1]["distributions"].items()
                      if name not in (imports.STDLIB, imports.NOT_INSTALLED)),
                     key=lambda kv: -kv[1]["cumulative_ms"])[:3]
        print("  top three distributions (cumulative ms, last profiled start): "
              + ", ".join(f"{name} {d['cumulative_ms']:.0f}" for name, d in top))


if __name__ == "__main__":
    main()
