"""A results file written by mcpstart 0.2.0 is read as 0.2.0 read it: ``report`` prints the same
long-form CSV and JSON and the same hyperfine exports, byte for byte, as 0.2.0 printed them
(tests/fixtures/v0_2_0), and the same Markdown table but for what a later issue changed on
purpose: sizes under 0.1 MiB in KiB or bytes, notes only for the metrics shown, the floor's
column named as the floor, a note several servers share printed once naming them, processes
sharing an executable counted, not named, a second large call's peak more than 10% above the
first's shown beside it (the .md files hold that), and the startup budget appended to the
long-form CSV and JSON (the faults.csv and faults.records.json files end with it; every line
before it is as 0.2.0 printed it)."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpstart.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "v0_2_0"
OUTPUTS = {"md": [], "csv": ["--format", "csv"], "records.json": ["--format", "json"],
           "hyperfine.md": ["--export-markdown", "-"], "hyperfine.csv": ["--export-csv", "-"],
           "hyperfine.json": ["--export-json", "-"]}


@pytest.mark.parametrize("name", ["reference", "faults"])
@pytest.mark.parametrize("suffix", list(OUTPUTS))
def test_report_prints_what_0_2_0_printed(name, suffix):
    result = CliRunner().invoke(main, ["report", str(FIXTURES / f"{name}.json"), *OUTPUTS[suffix]])
    assert result.exit_code == 0, result.output
    assert result.stdout == (FIXTURES / f"{name}.{suffix}").read_text(encoding="utf-8")


def test_two_files_transposed_print_what_0_2_0_printed():
    result = CliRunner().invoke(main, [
        "report", str(FIXTURES / "reference.json"), str(FIXTURES / "faults.json"), "--label", "a",
        "--label", "b", "--metrics", "handshake_ms.median", "--metrics", "memory.idle_rss_bytes",
        "--transpose"])
    assert result.exit_code == 0, result.output
    assert result.stdout == (FIXTURES / "both.transposed.md").read_text(encoding="utf-8")
