import json
import os

from mcpstart.measure.footprint import _npm_lock, lock_count, tool_lines, tree_bytes


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
    assert _npm_lock(npm) == {("zod", "4.1.0"), ("b", "1.0.0")}

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
