from pathlib import Path

from mcpstart.targets.build import KEEP_BUILDS, build_key, cache_root, ensure_built, toolchain_versions
from mcpstart.targets.recipes import load_recipe

from conftest import toy_recipe, write_recipe

WRITE_OUT = "import os; open(os.environ['TOY_OUT'], 'w').write('built'); print('compiled ok')"


def make(tmp_path: Path, name: str, tool: str = "python3", step: str = WRITE_OUT,
         version: list[str] | None = None):
    recipe = toy_recipe()
    recipe["source"] = f"servers/{name}"
    recipe["toolchains"] = [{"name": tool, "version": version or [tool, "--version"]}]
    recipe["build"] = {"env": {"TOY_OUT": "{build}/out.txt"}, "steps": [["python3", "-c", step]]}
    recipe["artifact"] = {"include": ["{build}/out.txt"]}
    return load_recipe(write_recipe(tmp_path, name, recipe, {"server.py": "print('hello')\n"}))


def test_build_then_cached_then_source_change_rebuilds_only_that_server(tmp_path):
    cache = tmp_path / "cache"
    one, two = make(tmp_path, "one"), make(tmp_path, "two")
    first = [ensure_built(r, cache) for r in (one, two)]
    assert [b.status for b in first] == ["built", "built"]
    assert (first[0].folder / "out.txt").read_text() == "built"
    assert (first[0].folder / "src" / "server.py").is_file()
    assert "compiled ok" in first[0].log.read_text()
    assert first[0].build_s > 0

    said = []
    again = [ensure_built(r, cache, progress=said.append) for r in (one, two)]
    assert [b.status for b in again] == ["cached", "cached"]
    assert again[0].folder == first[0].folder and again[0].build_s == first[0].build_s
    assert "nothing to do" in said[0]

    (tmp_path / "servers" / "one" / "server.py").write_text("print('changed')\n")
    third = [ensure_built(r, cache) for r in (one, two)]
    assert [b.status for b in third] == ["built", "cached"]
    assert third[0].folder != first[0].folder
    assert first[0].folder.exists()  # kept: a checkout switching back reuses it

    for n in range(3):  # only the KEEP_BUILDS most recently used builds stay
        (tmp_path / "servers" / "one" / "server.py").write_text(f"print({n})\n")
        ensure_built(one, cache)
    kept = sorted(p.name for p in (cache / "builds").glob("one-*") if p.is_dir())
    assert len(kept) == KEEP_BUILDS and first[0].folder.name not in kept
    locks = sorted(p.stem for p in (cache / "builds").glob("one-*.lock"))
    assert locks == kept  # a pruned build's lock file goes with it


def test_files_not_named_by_the_recipe_do_not_change_the_key(tmp_path):
    recipe = make(tmp_path, "one")
    versions, _ = toolchain_versions(recipe)
    before = build_key(recipe, versions)
    (tmp_path / "servers" / "one" / ".server.py.swp").write_text("editor droppings")
    (tmp_path / "servers" / "one" / "node_modules").mkdir()
    assert build_key(recipe, versions) == before
    assert build_key(recipe, {"python3": "Python 9.9"}) != before


def test_toolchain_whose_version_command_fails_is_skipped(tmp_path):
    recipe = make(tmp_path, "one", tool="sh",
                  version=["sh", "-c", "echo no default toolchain >&2; exit 1"])
    build = ensure_built(recipe, tmp_path / "c")
    assert build.status == "skipped"
    assert build.reason == ("sh found, but `sh -c echo no default toolchain >&2; exit 1` "
                            "exited with code 1: no default toolchain")


def test_corrupt_marker_means_build_again(tmp_path):
    recipe = make(tmp_path, "one")
    build = ensure_built(recipe, tmp_path / "c")
    for corrupt in ('{"key": "x"', '{}', '{"build_s": NaN, "finished": "x"}'):
        (build.folder / "mcpstart-build.json").write_text(corrupt)
        assert ensure_built(recipe, tmp_path / "c").status == "built"


def test_rebuild_forces_work(tmp_path):
    recipe = make(tmp_path, "one")
    ensure_built(recipe, tmp_path / "c")
    assert ensure_built(recipe, tmp_path / "c", rebuild=True).status == "built"


def test_missing_toolchain_is_skipped(tmp_path):
    build = ensure_built(make(tmp_path, "one", tool="no-such-compiler-xyz"), tmp_path / "c")
    assert build.status == "skipped" and build.reason == "no-such-compiler-xyz not found"
    assert not build.ok


def test_failed_step_reports_code_and_log_tail(tmp_path):
    step = "import sys; print('error: type mismatch at line 3'); sys.exit(3)"
    build = ensure_built(make(tmp_path, "one", step=step), tmp_path / "c")
    assert build.status == "failed"
    assert build.reason.startswith("step 1 (python3 -c import sys;")
    assert build.reason.endswith("exited with code 3")
    assert "error: type mismatch at line 3" in build.log_tail
    # a failed build is retried next time, not taken as cached
    assert ensure_built(build.recipe, tmp_path / "c").status == "failed"


def test_command_expands_placeholders(tmp_path):
    build = ensure_built(make(tmp_path, "one"), tmp_path / "c")
    command = build.command({"EXTRA": "1"})
    assert command.argv == ["python3", f"{build.folder}/src/server.py"]
    assert command.cwd == f"{build.folder}/src"
    assert command.env == {"EXTRA": "1"}


def test_cache_root_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("MCPSTART_CACHE_DIR", str(tmp_path / "env"))
    assert cache_root() == tmp_path / "env"
    assert cache_root(tmp_path / "opt") == tmp_path / "opt"
    monkeypatch.delenv("MCPSTART_CACHE_DIR")
    assert cache_root().name == "mcpstart"
