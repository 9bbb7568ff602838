import json
import os
import subprocess
from pathlib import Path

import pytest

from mcpstart.measure.footprint import (KEYS, debug_info, elf_sections, lock_count,
                                        measure_footprint,
                                        parse_cargo_tree, parse_maven_list, tool_lines,
                                        tree_bytes)
from mcpstart.targets.build import ensure_built
from mcpstart.targets.recipes import load_recipe

from conftest import require_programs, toy_recipe, write_recipe


def test_tree_bytes_excludes_and_counts_hard_links_once(tmp_path):
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    (site / "pip").mkdir(parents=True)
    (site / "pip" / "big.py").write_bytes(b"x" * 5000)
    (site / "pip-24.0.dist-info").mkdir()
    (site / "pip-24.0.dist-info" / "RECORD").write_bytes(b"x" * 700)
    (site / "mcp").mkdir()
    (site / "mcp" / "a.py").write_bytes(b"a" * 1000)
    os.link(site / "mcp" / "a.py", site / "mcp" / "b.py")
    (site / "mcp" / "link").symlink_to(site / "pip" / "big.py")
    (tmp_path / "server.py").write_bytes(b"s" * 30)
    include = [str(tmp_path / "venv/lib/python*/site-packages"), str(tmp_path / "server.py")]
    exclude = [str(tmp_path / "venv/lib/python*/site-packages/pip"),
               str(tmp_path / "venv/lib/python*/site-packages/pip-*.dist-info")]
    assert tree_bytes(include, exclude) == 1030
    assert tree_bytes(include) == 1030 + 5700


def test_lock_counts(tmp_path):
    npm = tmp_path / "package-lock.json"
    npm.write_text(json.dumps({"packages": {
        "": {"name": "me"}, "node_modules/zod": {"version": "4.1.0"},
        "node_modules/a/node_modules/b": {"version": "1.0.0"},
        "node_modules/typescript": {"version": "5.0.0", "dev": True}}}))
    assert lock_count(npm) == 3

    cargo = tmp_path / "Cargo.lock"
    cargo.write_text('version = 4\n[[package]]\nname = "me"\nversion = "0.1.0"\n'
                     '[[package]]\nname = "serde"\nversion = "1.0.0"\nsource = "registry+x"\n')
    assert lock_count(cargo) == 1

    gosum = tmp_path / "go.sum"
    gosum.write_text("example.com/a v1.0.0 h1:x=\nexample.com/a v1.0.0/go.mod h1:y=\n"
                     "example.com/b v0.2.0/go.mod h1:z=\n")
    assert lock_count(gosum) == 2

    req = tmp_path / "requirements.txt"
    req.write_text("# comment\nanyio==4.0.0 \\\n    --hash=sha256:ab\nmcp==2.3.0\n"
                   "uvicorn[standard]==0.30.0\n")
    assert lock_count(req) == 3


def test_tool_lines_skip_blank_and_comments(tmp_path):
    py = tmp_path / "server.py"
    py.write_text("# header\nimport x\n\n  # note\ndef f():\n    return 1  # trailing\n")
    assert tool_lines(py) == 3
    go = tmp_path / "main.go"
    go.write_text("// Package main\npackage main\n/* block\n still block */\nfunc main() {\n}\n\n")
    assert tool_lines(go) == 3


def unbuilt(tmp_path: Path, recipe: dict, files: dict[str, str] | None = None):
    """A recipe without [build] and its Build (status "no-build")."""
    path = write_recipe(tmp_path, "mine", {"source": "servers/mine", **recipe}, files or {})
    return ensure_built(load_recipe(path), tmp_path / "cache")


def test_minimal_recipe_says_why_each_figure_is_missing(tmp_path):
    build = unbuilt(tmp_path, {"run": {"argv": ["my-server"]}})
    block, sdk_version, warnings = measure_footprint(build, False)
    assert {k: block[k] for k in KEYS} == dict.fromkeys(KEYS)
    assert block["not_measured"] == {
        "dev_tree_bytes": "the recipe has no [build]",
        "build_s": "the recipe has no [build]",
        "build_cached": "the recipe has no [build]",
        "artifact_bytes": "the recipe has no [artifact]",
        "debug_info": "the recipe has no [artifact]",
        "sections": "the recipe has no [artifact]",
        "tool_lines": "the recipe names no tool_file",
        "dependency_count": "the recipe has no [dependencies]",
        "lock_count": "the recipe has no [dependencies]",
    }
    assert (sdk_version, warnings) == (None, [])


def test_none_method_counts_zero_dependencies_and_no_lock(tmp_path):
    script = "# a comment\nread line\necho \"$line\"\n"
    build = unbuilt(tmp_path, {"tool_file": "server.sh", "run": {"argv": ["sh", "server.sh"]},
                               "artifact": {"include": ["server.sh"]},
                               "dependencies": {"method": "none"}}, {"server.sh": script})
    block, _, warnings = measure_footprint(build, False)
    assert block["dependency_count"] == 0 and block["lock_count"] is None
    assert block["artifact_bytes"] == len(script) and block["debug_info"] is None
    assert block["tool_lines"] == 3  # '#' is not a comment outside Python: counted as a line
    assert block["not_measured"]["lock_count"] == "the recipe names no lock file"
    assert block["not_measured"]["debug_info"] == "no ELF file in the artifact (an interpreted server)"
    assert "dependency_count" not in block["not_measured"] and warnings == []


def test_a_figure_that_fails_is_null_with_a_warning_not_na(tmp_path):
    build = unbuilt(tmp_path, {"run": {"argv": ["x"]},
                               "dependencies": {"method": "python-venv", "target": "venv",
                                                "lock": "requirements.txt"}})
    block, _, warnings = measure_footprint(build, False)
    assert block["dependency_count"] is None and block["lock_count"] is None
    assert "dependency_count" not in block["not_measured"]
    assert [(w["kind"], w["metric"]) for w in warnings] == [
        ("footprint", "footprint.lock_count"), ("footprint", "footprint.dependency_count")]
    assert "no site-packages under" in warnings[1]["detail"]


def test_built_toy_footprint_comes_from_its_build(tmp_path):
    recipe = toy_recipe()
    recipe["artifact"] = {"include": ["{src}/server.py"]}
    recipe["dependencies"] = {"method": "none", "lock": "{src}/requirements.txt"}
    recipe["sources"] = ["server.py", "requirements.txt"]
    server = "import sys\n# note\nprint(1)\n"
    path = write_recipe(tmp_path, "toy", recipe, {"server.py": server,
                                                  "requirements.txt": "a==1\nb==2\n"})
    build = ensure_built(load_recipe(path), tmp_path / "cache")
    block, _, warnings = measure_footprint(build, True)
    assert block["dev_tree_bytes"] == build.dev_tree_bytes > 0
    assert block["build_s"] == build.build_s and block["build_cached"] is True
    assert block["artifact_bytes"] == len(server) and block["tool_lines"] == 2
    assert block["lock_count"] == 2 and block["dependency_count"] == 0
    assert block["not_measured"] == dict.fromkeys(
        ("debug_info", "sections"), "no ELF file in the artifact (an interpreted server)")
    assert warnings == []


def _npm_entries(names: dict[str, dict]) -> dict:
    return {"": {"name": "server", "version": "1.0.0"}, **{
        f"node_modules/{name}": {"version": "1.0.0", **meta} for name, meta in names.items()}}


def test_npm_counts_the_installed_tree_not_other_platforms_binaries(tmp_path):
    darwin = {"optional": True, "os": ["darwin"], "cpu": ["arm64"]}
    win = {"optional": True, "os": ["win32"], "cpu": ["x64"]}
    linux = {"optional": True, "os": ["linux"], "cpu": ["x64"]}
    lock = _npm_entries({"zod": {}, "esbuild": {}, "@esbuild/darwin-arm64": darwin,
                         "@esbuild/win32-x64": win, "@esbuild/linux-x64": linux,
                         "typescript": {"dev": True}, "a": {}, "a/node_modules/b": {}})
    installed = {k: v for k, v in lock.items()  # what npm ci + prune left on this linux host
                 if k and "darwin" not in k and "win32" not in k and "typescript" not in k}
    build = unbuilt(tmp_path, {"run": {"argv": ["node", "server.js"]},
                               "dependencies": {"method": "npm-installed",
                                                "target": "node_modules",
                                                "lock": "package-lock.json"}},
                    {"package-lock.json": json.dumps({"lockfileVersion": 3, "packages": lock})})
    modules = tmp_path / "servers" / "mine" / "node_modules"
    modules.mkdir()
    (modules / ".package-lock.json").write_text(json.dumps({"lockfileVersion": 3,
                                                            "packages": installed}))
    block, _, warnings = measure_footprint(build, False)
    assert warnings == []
    assert block["dependency_count"] == 5  # zod, esbuild, @esbuild/linux-x64, a, b
    assert block["lock_count"] == 8  # every entry of package-lock.json but the root

    (modules / ".package-lock.json").write_text(json.dumps({"packages": {
        **installed, "node_modules/typescript": {"version": "5.0.0", "dev": True}}}))
    assert measure_footprint(build, False)[0]["dependency_count"] == 5  # not pruned: dev left out


def test_parse_cargo_tree_dedupes_and_keeps_versions_apart():
    out = ("server v0.1.0 (/src)\nserde v1.0.200\nitoa v1.0.11\nserde v1.0.200 (*)\n"
           "rand v0.8.5\nrand v0.9.0\n")
    assert parse_cargo_tree(out) == {("serde", "1.0.200"), ("itoa", "1.0.11"),
                                     ("rand", "0.8.5"), ("rand", "0.9.0")}


def test_parse_maven_list_keeps_group_classifier_and_version():
    out = ("\nThe following files have been resolved:\n"
           "   io.modelcontextprotocol.sdk:mcp:jar:2.1.0:compile -- module io.modelcontextprotocol.sdk.mcp\n"
           "   io.projectreactor:reactor-core:jar:3.7.0:compile -- module reactor.core [auto]\n"
           "   org.example:native:jar:linux-x86_64:1.0:runtime\n"
           "   org.other:native:jar:1.0:runtime\n\n")
    assert parse_maven_list(out) == {("io.modelcontextprotocol.sdk:mcp", "2.1.0"),
                                     ("io.projectreactor:reactor-core", "3.7.0"),
                                     ("org.example:native:linux-x86_64", "1.0"),
                                     ("org.other:native", "1.0")}
    assert parse_maven_list("\nThe following files have been resolved:\n   none\n") == set()


def _crate(root: Path, name: str, manifest: str = "", lib: bool = True) -> None:
    (root / name / "src").mkdir(parents=True)
    (root / name / "Cargo.toml").write_text(
        f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n{manifest}')
    (root / name / "src" / ("lib.rs" if lib else "main.rs")).write_text("fn main() {}\n" * (not lib))


def test_cargo_counts_crates_in_the_binary_for_the_host_only(tmp_path):
    require_programs("cargo")
    servers = tmp_path / "servers"
    _crate(servers, "shared")
    _crate(servers, "normal_dep", '[dependencies]\nshared = { path = "../shared" }\n')
    _crate(servers, "macro_helper")
    _crate(servers, "my_macro", '[lib]\nproc-macro = true\n'
           '[dependencies]\nmacro_helper = { path = "../macro_helper" }\n')
    for name in ("build_helper", "win_only", "test_only"):
        _crate(servers, name)
    _crate(servers, "mine", '[dependencies]\nnormal_dep = { path = "../normal_dep" }\n'
           'my_macro = { path = "../my_macro" }\n'
           '[build-dependencies]\nbuild_helper = { path = "../build_helper" }\n'
           '[dev-dependencies]\ntest_only = { path = "../test_only" }\n'
           "[target.'cfg(windows)'.dependencies]\nwin_only = { path = \"../win_only\" }\n",
           lib=False)
    subprocess.run(["cargo", "generate-lockfile", "--offline"], cwd=servers / "mine", check=True,
                   capture_output=True)
    build = unbuilt(tmp_path, {"run": {"argv": ["x"]},
                               "dependencies": {"method": "cargo-tree", "target": ".",
                                                "lock": "Cargo.lock"}})
    block, _, warnings = measure_footprint(build, False)
    assert warnings == []
    assert block["dependency_count"] == 2  # normal_dep and shared; not the macro, its helper,
    # the build-only, dev-only or windows-only crate
    assert block["lock_count"] == 0  # path crates have no source in Cargo.lock


def test_debug_info_and_sections_of_elf_files(tmp_path):
    require_programs("cc", "strip", "size")
    (tmp_path / "h.c").write_text("int main(void) { return 0; }\n")
    def cc(name: str, *flags: str) -> str:
        subprocess.run(["cc", *flags, "-o", name, "h.c"], cwd=tmp_path, check=True)
        return str(tmp_path / name)
    with_g, plain, compressed = cc("g", "-g"), cc("plain", "-O2"), cc("z", "-g", "-gz=zlib-gnu")
    stripped = cc("stripped", "-g")
    subprocess.run(["strip", stripped], check=True)
    script = str(tmp_path / "h.c")
    sections = {path: elf_sections([path]) for path in (with_g, plain, compressed, stripped)}
    assert debug_info(sections[with_g]) is True
    assert debug_info(sections[compressed]) is True  # .zdebug_info
    assert debug_info(sections[plain]) is False
    assert debug_info(sections[stripped]) is False
    assert elf_sections([script]) is None
    assert debug_info(elf_sections([script, plain, with_g])) is True
    # binutils' size(1) in System V form: one "name size address" line per section
    listed = subprocess.run(["size", "-A", plain], capture_output=True, text=True,
                            check=True).stdout
    by_size = {f[0]: int(f[1]) for f in (line.split() for line in listed.splitlines())
               if len(f) == 3 and f[0].startswith(".") and int(f[1])}
    tables = (".symtab", ".strtab", ".shstrtab")  # size(1) leaves the symbol and string tables out
    assert {k: v for k, v in sections[plain].items() if k not in tables} == by_size
    both = elf_sections([plain, stripped])
    assert both[".text"] == sections[plain][".text"] + sections[stripped][".text"]
    broken = tmp_path / "broken"
    broken.write_bytes(b"\x7fELF" + b"\0" * 8)
    with pytest.raises(ValueError, match="not a readable ELF file"):
        elf_sections([str(broken)])
