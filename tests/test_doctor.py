"""mcpstart doctor on this machine: every capability probed for real, and the exit status
when a piece is missing."""

import json
import os
import re

import psutil
import pytest
from click.testing import CliRunner

from mcpstart import doctor
from mcpstart.cli import main

from conftest import toy_recipe, write_recipe


@pytest.fixture
def recipes(tmp_path):
    """A recipe folder: ``ok`` needs python3 only, ``nocc`` also a compiler that is not
    there."""
    write_recipe(tmp_path, "ok", toy_recipe(), {"server.py": "print()\n"})
    missing = toy_recipe()
    missing["toolchains"].append({"name": "nocc", "version": ["nocc-xyz", "--version"]})
    write_recipe(tmp_path, "nocc", missing, {"server.py": "print()\n"})
    return tmp_path / "build-recipes"


def by_name(checks):
    return {c.name: c for c in checks}


def test_this_machine_has_every_capability(recipes):
    checks = by_name(doctor.run_checks(str(recipes)))
    assert checks["pidfd + poll"].ok and checks["pidfd + poll"].needed
    hwm = re.fullmatch(r"VmHWM reset: ([\d.]+) MiB -> ([\d.]+) MiB", checks["clear_refs"].found)
    assert checks["clear_refs"].ok and hwm
    assert float(hwm[1]) - float(hwm[2]) >= doctor.TOUCH_MIB * 0.9  # the freed 64 MiB
    rss, peak = map(float, re.fullmatch(r"RSS ([\d.]+) MiB \(statm\), VmHWM ([\d.]+) MiB \(status\)",
                                        checks["/proc/PID/statm + status"].found).groups())
    assert peak - rss >= doctor.TOUCH_MIB * 0.9
    pss = float(re.fullmatch(r"Pss ([\d.]+) MiB", checks["smaps_rollup (PSS)"].found)[1])
    assert 0 < pss < rss
    orphan = int(re.fullmatch(r"adopted the orphan (\d+)", checks["child subreaper"].found)[1])
    assert not psutil.pid_exists(orphan)  # killed and reaped
    load = checks["load average"]
    assert re.fullmatch(rf"\d+\.\d\d \(1 min\) on {os.cpu_count()} cores", load.found)
    assert load.status == ("busy" if os.getloadavg()[0] > os.cpu_count() else "ok")


def test_toolchains_from_the_recipes(recipes):
    checks = by_name(doctor.run_checks(str(recipes)))
    python = checks["toolchain python3"]
    assert python.ok and re.fullmatch(r"Python 3\.\d+\.\d+", python.found)
    assert python.meaning == "builds nocc, ok"  # one row, both recipes named
    assert checks["toolchain nocc"].status == "missing"
    assert checks["toolchain nocc"].found == "nocc-xyz not found"
    assert not checks["toolchain nocc"].needed  # it only skips nocc
    assert checks["servers"].ok and checks["servers"].found == "1 of 2 can be built: ok"
    assert doctor.verdict(list(checks.values()))[1] == 0
    strict = by_name(doctor.run_checks(str(recipes), require_all=True))
    assert strict["toolchain nocc"].needed
    text, status = doctor.verdict(list(strict.values()))
    assert status == 1 and text.startswith("not ready: toolchain nocc missing")


def test_cli_exit_0_and_the_table(recipes, idle):
    result = CliRunner().invoke(main, ["doctor", "--recipes", str(recipes), "--format", "plain"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["check", "status", "found", "for", "the", "figures"]
    assert any(re.match(r"pidfd \+ poll\s+ok\s+exit seen through the pidfd", l) for l in lines)
    assert any(re.match(r"toolchain nocc\s+missing\s+nocc-xyz not found\s+nocc skipped", l)
               for l in lines)
    assert lines[-1].startswith("ready")
    strict = CliRunner().invoke(main, ["doctor", "--recipes", str(recipes), "--require-all"])
    assert strict.exit_code == 1


@pytest.fixture
def idle(monkeypatch):
    """A quiet machine for the verdicts below (the real load average varies with whatever
    else runs; the load check itself is tested above), its one launcher a shell."""
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    monkeypatch.setattr(doctor, "LAUNCHERS", {"sh": "shell scripts"})


def test_launchers_found_and_absent(recipes, monkeypatch, idle):
    monkeypatch.setattr(doctor, "LAUNCHERS", {"python3": "Python scripts",
                                              "no-such-launcher-xyz": "nothing"})
    checks = by_name(doctor.run_checks(str(recipes)))
    python = checks["launcher python3"]
    assert python.ok and not python.needed
    assert re.fullmatch(r"/\S+/python3: Python 3\.\d+\.\d+", python.found), python.found
    absent = checks["launcher no-such-launcher-xyz"]
    assert (absent.status, absent.found, absent.needed) == ("absent", "not on PATH", False)
    assert absent.meaning == "a server a config starts with no-such-launcher-xyz fails to start"
    assert doctor.verdict(list(checks.values())) == (
        "ready, with less: toolchain nocc; the table says what that changes in the figures. "
        "Not on PATH: no-such-launcher-xyz (servers started with them fail).", 0)


def test_a_config_whose_program_is_missing_is_exit_1(recipes, tmp_path, idle):
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(json.dumps({"mcpServers": {
        "one": {"command": "python3", "args": ["a.py"]},
        "two": {"command": "python3", "args": ["b.py"]},
        "gone": {"command": "no-such-program-xyz"},
        "remote": {"url": "https://example.invalid/mcp"}}}))
    result = CliRunner().invoke(main, ["doctor", "--recipes", str(recipes), "--config",
                                       str(config), "--format", "plain"])
    assert result.exit_code == 1
    assert re.search(r"program python3\s+ok\s+/\S+/python3: Python 3\.\d+\.\d+\s+starts one, two",
                     result.stdout)
    assert re.search(r"program no-such-program-xyz\s+missing \(needed\)\s+no-such-program-xyz "
                     r"is not on the server's PATH\s+gone cannot start", result.stdout)
    assert "remote" not in result.stdout
    broken = tmp_path / "mcp.json"
    broken.write_text("{not json")
    result = CliRunner().invoke(main, ["doctor", "--recipes", str(recipes), "--config",
                                       str(broken)])
    assert result.exit_code == 1 and f"config {broken}" in result.stdout


def test_no_pidfd_is_exit_1(recipes, monkeypatch, idle):
    def no_pidfd(pid, flags=0):
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    result = CliRunner().invoke(main, ["doctor", "--recipes", str(recipes), "--format", "plain"])
    assert result.exit_code == 1
    assert re.search(r"pidfd \+ poll\s+missing \(needed\)\s+pidfd_open: \[Errno 38\]",
                     result.stdout)
    assert result.stdout.splitlines()[-1] == ("not ready: pidfd + poll missing, and a default "
                                              "run needs it; also toolchain nocc.")


def test_no_clear_refs_only_degrades(recipes, monkeypatch, idle):
    monkeypatch.setattr(doctor, "check_clear_refs", lambda pid: doctor.Check(
        "clear_refs", "missing", "Permission denied", "peak sampled"))
    result = CliRunner().invoke(main, ["doctor", "--recipes", str(recipes)])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == (
        "ready, with less: toolchain nocc, clear_refs; the table says what that changes in "
        "the figures.")


def test_no_buildable_server_is_exit_1(tmp_path):
    missing = toy_recipe()
    missing["toolchains"] = [{"name": "nocc", "version": ["nocc-xyz", "--version"]}]
    write_recipe(tmp_path, "nocc", missing, {"server.py": "print()\n"})
    result = CliRunner().invoke(main, ["doctor", "--recipes", str(tmp_path / "build-recipes"),
                                       "--format", "plain"])
    assert result.exit_code == 1
    assert re.search(r"servers\s+missing \(needed\)\s+0 of 1 can be built\s+no server",
                     result.stdout)


def test_a_broken_recipe_folder_is_exit_1(tmp_path):
    (tmp_path / "bad.toml").write_text("language = 'go'\n")
    result = CliRunner().invoke(main, ["doctor", "--recipes", str(tmp_path), "--format",
                                       "plain"])
    assert result.exit_code == 1
    assert "bad.toml: field 'run' is missing" in result.stdout


def test_format_json_gives_the_verdict_and_every_check(recipes, idle):
    result = CliRunner().invoke(main, ["doctor", "--recipes", str(recipes), "--format", "json",
                                       "--require-all"])
    assert result.exit_code == 1, result.output
    verdict = json.loads(result.stdout)
    assert (verdict["ready"], verdict["exit_status"]) == (False, 1)
    assert verdict["verdict"].startswith("not ready: toolchain nocc missing")
    checks = {c["name"]: c for c in verdict["checks"]}
    assert checks["toolchain nocc"] == {"name": "toolchain nocc", "status": "missing",
                                        "found": "nocc-xyz not found", "meaning":
                                        "nocc skipped, which fails the run (--require-all)",
                                        "needed": True, "ok": False}
    assert checks["pidfd + poll"]["ok"] is True and checks["pidfd + poll"]["needed"] is True
