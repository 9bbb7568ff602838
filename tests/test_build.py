from pathlib import Path

import json

from mcpstart.measure.footprint import tree_bytes
from mcpstart.targets.build import KEEP_BUILDS, build_key, cache_root, ensure_built, toolchain_versions
from mcpstart.targets.recipes import load_recipe

from conftest import toy_recipe, write_recipe

WRITE_OUT = "import os; open(os.environ['TOY_OUT'], 'w').write('built'); print('compiled ok')"


def make(tmp_path: Path, name: str, tool: str = "python3", step: str = WRITE_OUT,
         version: list[str] | None = None, more: tuple[str, ...] = ()):
    recipe = toy_recipe()
    recipe["source"] = f"servers/{name}"
    recipe["toolchains"] = [{"name": tool, "version": version or [tool, "--version"]}]
    recipe["build"] = {"env": {"TOY_OUT": "{build}/out.txt"},
                       "steps": [["python3", "-c", s] for s in (step, *more)]}
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
    assert "nothing to do" in said[0].text and said[0].phase == "build"

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
    marker = json.loads((build.folder / "mcpstart-build.json").read_text())
    assert marker["dev_tree_bytes"] == build.dev_tree_bytes > 0
    older = {k: v for k, v in marker.items() if k != "dev_tree_bytes"}  # before dev_tree_bytes
    for corrupt in ('{"key": "x"', '{}', '{"build_s": NaN, "finished": "x"}', json.dumps(older),
                    json.dumps({**marker, "dev_tree_bytes": -1})):
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


def test_a_workload_build_has_its_own_folders_and_shares_the_cache(tmp_path):
    cache = tmp_path / "cache"
    recipe = toy_recipe()
    recipe["workload"] = "benchmark"
    recipe["build"] = {"env": {"TOY_OUT": "{cache}/shared-out.txt"}, "steps": [["python3", "-c", WRITE_OUT]]}
    workload = load_recipe(write_recipe(tmp_path, "toy", recipe, {"server.py": "print('hello')\n"}))
    reference = make(tmp_path, "toy")  # the same name, in the reference set
    kept = ensure_built(reference, cache).folder
    built = [ensure_built(workload, cache, rebuild=True) for _ in range(KEEP_BUILDS + 1)]
    assert {b.status for b in built} == {"built"}
    assert built[-1].folder.name.startswith("benchmark-toy-")
    assert (cache / "shared-out.txt").read_text() == "built"  # {cache}: the cache folder
    assert kept.is_dir()  # the workload's builds never prune the reference server's


def test_cache_root_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("MCPSTART_CACHE_DIR", str(tmp_path / "env"))
    assert cache_root() == tmp_path / "env"
    assert cache_root(tmp_path / "opt") == tmp_path / "opt"
    monkeypatch.delenv("MCPSTART_CACHE_DIR")
    assert cache_root().name == "mcpstart"


def test_dev_tree_keeps_what_a_later_step_deleted(tmp_path):
    grow = "open('big.bin', 'wb').write(b'x' * 50000)"
    prune = "import os; os.remove('big.bin')"
    recipe = make(tmp_path, "one", step=grow, more=(prune,))
    build = ensure_built(recipe, tmp_path / "c")
    assert build.status == "built" and not (build.folder / "src" / "big.bin").exists()
    log = build.log.read_text()
    after_first_step = log[:log.index("$ python3 -c import os")]  # the log when step 1 ended
    src_bytes = len("print('hello')\n")
    assert build.dev_tree_bytes == 50000 + src_bytes + len(after_first_step)
    assert tree_bytes([str(build.folder)]) < 50000  # what is left on disk now
    cached = ensure_built(recipe, tmp_path / "c")
    assert cached.status == "cached" and cached.dev_tree_bytes == build.dev_tree_bytes


def test_recipe_without_build_is_ready_to_spawn_as_written(tmp_path):
    path = write_recipe(tmp_path, "mine", {"source": "servers/mine",
                                           "run": {"argv": ["python3", "server.py"],
                                                   "env": {"MODE": "stdio"}}},
                        {"server.py": "print('hello')\n"})
    said = []
    build = ensure_built(load_recipe(path), tmp_path / "c", progress=said.append)
    assert (build.status, build.ok, build.folder, build.build_s) == ("no-build", True, None, None)
    assert [s.text for s in said] == ["mine: nothing to build (the recipe has no [build])"]
    assert not (tmp_path / "c").exists()  # nothing written to the cache
    command = build.command({"EXTRA": "1"})
    assert command.argv == ["python3", "server.py"]
    assert command.cwd == str((tmp_path / "servers" / "mine").resolve())
    assert command.env == {"MODE": "stdio", "EXTRA": "1"}
    assert build.path("node_modules") == str((tmp_path / "servers" / "mine").resolve() / "node_modules")
    assert build.path("/opt/x") == "/opt/x"


def test_recipe_without_build_or_source_runs_in_mcpstarts_directory(tmp_path):
    path = write_recipe(tmp_path, "bare", {"run": {"argv": ["my-server"]}}, {})
    build = ensure_built(load_recipe(path), tmp_path / "c")
    assert build.command().cwd is None
    assert build.path("x") == str(tmp_path / "x")  # relative to the recipe folder's parent


def test_recipe_without_build_still_needs_its_toolchains(tmp_path):
    path = write_recipe(tmp_path, "bare", {
        "toolchains": [{"name": "zz", "version": ["no-such-runtime-xyz", "-v"]}],
        "run": {"argv": ["no-such-runtime-xyz"]}}, {})
    build = ensure_built(load_recipe(path), tmp_path / "c")
    assert (build.status, build.reason, build.ok) == ("skipped", "no-such-runtime-xyz not found", False)
