"""The CI recipe of docs/ci.md: its GitHub Actions workflow is valid (actionlint, where it is
installed), every mcpstart command in it is one this mcpstart accepts, and the job fails on
compare's non-zero exit status, also on a pull request from a fork (which cannot comment)."""

import re
import shlex
import shutil
import subprocess
from pathlib import Path

from mcpstart.cli import main

from conftest import require_modules, unavailable

DOC = Path(__file__).parent.parent / "docs" / "ci.md"


def workflow() -> str:
    """The one YAML block of docs/ci.md."""
    [block] = re.findall(r"^```yaml\n(.*?)^```$", DOC.read_text(), re.S | re.M)
    return block


def mcpstart_commands(steps: list[dict]) -> list[list[str]]:
    """The arguments of each ``mcpstart`` command the steps run, a redirection cut off."""
    commands = []
    for step in steps:
        for line in step.get("run", "").splitlines():
            words = shlex.split(line)
            if words and words[0] == "mcpstart":
                commands.append(words[1:words.index(">")] if ">" in words else words[1:])
    return commands


def test_every_mcpstart_command_of_the_workflow_parses_and_a_regression_fails_the_job():
    require_modules("yaml")
    import yaml

    steps = yaml.safe_load(workflow())["jobs"]["gate"]["steps"]
    commands = mcpstart_commands(steps)
    assert [c[0] for c in commands] == ["measure", "measure", "compare", "compare"]
    for args in commands:  # click parses each against this mcpstart: options and values
        with main.make_context("mcpstart", list(args)) as ctx:
            command = main.get_command(ctx, args[0])
            command.make_context(args[0], args[1:], parent=ctx).close()
    [compare] = [s for s in steps if s.get("id") == "compare"]
    assert 'echo "status=$?" >> "$GITHUB_OUTPUT"' in compare["run"]
    [gate] = [s for s in steps if "steps.compare.outputs.status" in str(s.get("if"))]
    assert gate["if"] == "steps.compare.outputs.status != '0'"
    assert gate["run"].rstrip().endswith("exit 1")
    # a fork's read-only token cannot comment: the comment is skipped there, not the gate
    [comment] = [s for s in steps if "gh pr comment" in s.get("run", "")]
    assert comment["if"] == "github.event.pull_request.head.repo.full_name == github.repository"
    assert "if" not in compare and steps.index(comment) < steps.index(gate)


def test_the_workflow_passes_actionlint(tmp_path):
    """actionlint (with shellcheck, where that is installed, for the run scripts); not on CI's
    machines, where the test above checks the workflow's commands."""
    linter = shutil.which("actionlint")
    if linter is None:
        unavailable("actionlint is not installed (go install "
                    "github.com/rhysd/actionlint/cmd/actionlint@latest)", beyond_ci=True)
    (tmp_path / "mcpstart.yml").write_text(workflow())
    done = subprocess.run([linter, "-no-color", str(tmp_path / "mcpstart.yml")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
