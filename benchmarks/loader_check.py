"""Are mcpstart's dynamic loader counts (the ``loader`` block, measure/native_loader.py: glibc's
statistics read in extra starts) what the ELF files themselves say? mcpstart measures each
native reference server (``mcpstart measure --runs 1`` through its CLI); this script then
reads, with pyelftools and nothing of mcpstart's:

- the objects: the program, and each library ``ldd`` lists (glibc's loader in its tracing
  mode: a route other than the statistics), ``linux-vdso`` apart;
- the relocations each object's dynamic relocation tables hold: relative ones (``R_*_RELATIVE``
  entries of REL/RELA sections: glibc counts these, not ``DT_RELR``), and those naming a
  symbol that the loader processes before the program runs (every allocated REL/RELA section
  but the PLT's, and the PLT's too when the object binds now: ``DF_BIND_NOW``, ``DF_1_NOW``
  or ``DT_BIND_NOW``). The loader relocates itself before its statistics start, so ld.so's
  tables are not counted.

Targets: the same objects; relative relocations equal; and glibc's symbol resolutions (its
lookups, ``relocations``, plus those its one-entry cache answered) at most OWN_LOOKUPS above
the tables' symbol entries and never below. The excess is the lookups the loader makes for
itself, by no table entry: 13 to 16 in every program tried on 2026-12-03 (the C floor, ls,
python3.11, git, node), each run with ``LD_BIND_NOW=1`` so that every entry is processed.

    python benchmarks/loader_check.py [NAMES...]

NAMES: reference recipes with a native program (default: c rust c-http rust-http). Builds
what is stale (mcpstart's build cache).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile

from checks import arguments, load_average, reference_builds
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection

RELATIVE = {"EM_X86_64": 8, "EM_386": 8, "EM_AARCH64": 1027, "EM_RISCV": 3}
"""The relative relocation's type number per machine (each ABI's ELF supplement)."""
BIND_NOW = {("DT_FLAGS", 0x8), ("DT_FLAGS_1", 0x1)}
OWN_LOOKUPS = 20


def libraries(program: str) -> list[str]:
    """The paths ``ldd`` resolves for ``program``, the loader included, the vDSO apart."""
    out = subprocess.run(["ldd", program], capture_output=True, text=True, check=True).stdout
    paths = []
    for line in out.splitlines():
        words = line.split()
        if "=>" in words and words[words.index("=>") + 1].startswith("/"):
            paths.append(words[words.index("=>") + 1])
        elif words and words[0].startswith("/"):
            paths.append(words[0])
    return paths


def counts(path: str) -> tuple[int, int]:
    """``(relative, symbol)`` relocations of one ELF file processed at start (module doc)."""
    with open(path, "rb") as file:
        elf = ELFFile(file)
        tags = [t.entry for s in elf.iter_sections() if isinstance(s, DynamicSection)
                for t in s.iter_tags()]
        now = any(t.d_tag == "DT_BIND_NOW" for t in tags) or any(
            t.d_tag == tag and t.d_val & bit for t in tags for tag, bit in BIND_NOW)
        plt = next((t.d_val for t in tags if t.d_tag == "DT_JMPREL"), None)
        relative_type = RELATIVE[elf["e_machine"]]
        relative = symbol = 0
        for section in elf.iter_sections():
            if not isinstance(section, RelocationSection) or not section["sh_flags"] & 2:
                continue
            lazy = section["sh_addr"] == plt and not now
            for entry in section.iter_relocations():
                if entry["r_info_type"] == relative_type:
                    relative += 1
                elif entry["r_info_sym"] and not lazy:
                    symbol += 1
        return relative, symbol


def measured(name: str, transport: str) -> dict:
    """mcpstart's ``loader`` block of one reference server, measured through its CLI."""
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "r.json")
        subprocess.run(["mcpstart", "measure", "--runs", "1",
                        "--warmup", "0", "--load-s", "0", "--transport", transport,
                        "--only", name, "-o", out], check=True, capture_output=True)
        with open(out) as file:
            row = json.load(file)["servers"][0]
    if row.get("loader") is None:
        raise SystemExit(f"{name}: no loader block: {row['not_measured'].get('loader')}")
    return row["loader"]


def main() -> None:
    args = arguments(__doc__)
    names = args.names or ["c", "rust", "c-http", "rust-http"]
    print(f"loader counts: mcpstart (glibc's statistics) against the ELF files; {load_average()}")
    for name, (transport, command) in reference_builds(names).items():
        program = command.program()
        block = measured(name, transport)
        files = [program, *libraries(program)]
        relative = symbol = 0
        for path in files:
            if os.path.basename(path).startswith("ld-linux"):
                continue
            found = counts(path)
            relative, symbol = relative + found[0], symbol + found[1]
        objects = sorted(os.path.basename(p) for p in files)
        same = sorted(block["objects"]) == objects
        print(f"{name}: objects {len(block['objects'])} / {len(objects)} "
              f"({'met' if same else 'MISSED: ' + ', '.join(block['objects'])})")
        resolved = block["relocations"] + block["relocations_from_cache"]
        print(f"  relative relocations  mcpstart {block['relative_relocations']:7,} ELF tables "
              f"{relative:7,} ratio {block['relative_relocations'] / relative:.3f}  "
              f"{'met' if block['relative_relocations'] == relative else 'MISSED'}")
        print(f"  symbol resolutions    mcpstart {resolved:7,} ELF tables {symbol:7,} "
              f"ratio {resolved / symbol:.3f}, the loader's own {resolved - symbol:+}  "
              f"{'met' if 0 <= resolved - symbol <= OWN_LOOKUPS else 'MISSED'}")

if __name__ == "__main__":
    main()
