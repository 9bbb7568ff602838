"""End to end: the search workload's servers (workload-recipes/search-*.toml), built with
mcpstart's build and driven with a plain client over pipes, no mcpstart measuring code.
search_docs answers the same hits, in order, in Go, Rust and TypeScript for a fixed query set,
and the same as BM25 computed here from the corpus's pages (not from the index the servers
load); read_file refuses paths outside the corpus folder and reads the large file whole;
run_tests returns the tail of the script's output as sh prints it; a server whose index does
not load never answers initialize (the index is loaded before the server serves). Builds go to
mcpstart's cache, so only the first run pays for them; a missing toolchain skips through
unavailable()."""

import hashlib
import json
import math
import re
import subprocess
from contextlib import suppress
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import unavailable
from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import WORKLOAD_RECIPE_FOLDER, WORKLOADS, load_recipes
from mcpstart.workload import load
from test_workload_servers import ANSWER_TIMEOUT_S, INITIALIZE, stdio_client

pytestmark = [pytest.mark.e2e, pytest.mark.untimed]  # builds, and what each tool answers

RECIPES = Path(__file__).parent.parent / WORKLOAD_RECIPE_FOLDER
NAMES = ("search-go", "search-rust", "search-typescript")
WORKLOAD = load(str(WORKLOADS / "search.toml"))
QUERIES = ("session transport latency", "index token", "handshake", "mutex lock thread",
           "Search QUERY document, corpus; score!", "chianfeum", "runemoku anku heap",
           "server server", "cache memory process pool worker queue", "nosuchword")
"""Real and generated words of the corpus (corpus.py's TERMS and its vocabulary), frequent
and rare, mixed case and punctuation, a repeated term, and a word in no page."""
LIMIT = 10
OUTSIDE = ("../build.log", "/etc/passwd", "docs/../../build.log", "..")
"""Paths outside the corpus folder that exist: the build's log beside it, an absolute path,
a way back out through docs/, the build folder itself."""
K1, B = 1.2, 0.75


@pytest.fixture(scope="module")
def built() -> dict:
    """Recipe name -> (build command, corpus folder) of each built server."""
    servers = {}
    for recipe in load_recipes(RECIPES, list(NAMES)):
        build = ensure_built(recipe, cache_root())
        if build.status == "skipped":
            unavailable(f"{recipe.name}: {build.reason}")
        assert build.ok, f"{recipe.name}: {build.reason}\n{build.log_tail}"
        servers[recipe.name] = build.command(), build.folder / "corpus"
    return servers


@pytest.fixture(scope="module")
def answers(built, tmp_path_factory) -> dict:
    """Recipe name -> {"hits": [ids per query], "read": {path: answer}, "manual": text,
    "tests": {filter: structured output}} from one session with each server."""
    out = {}
    for name, (command, _) in built.items():
        log = tmp_path_factory.mktemp(name) / "server.log"
        with stdio_client(command, log) as request:
            ids = iter(range(10, 10**6))

            def call(tool: str, arguments: dict) -> dict:
                return request({"jsonrpc": "2.0", "id": next(ids), "method": "tools/call",
                                "params": {"name": tool, "arguments": arguments}})

            hits = []
            for query in QUERIES:
                result = call("search_docs", {"query": query, "limit": LIMIT})["result"]
                assert not result.get("isError"), result
                assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
                hits.append([hit["id"] for hit in result["structuredContent"]["hits"]])
            [manual] = call("read_file", WORKLOAD.calls[1].arguments)["result"]["content"]
            out[name] = {"hits": hits, "manual": manual["text"],
                         "read": {path: call("read_file", {"path": path}) for path in OUTSIDE},
                         "tests": {f: call("run_tests", {"filter": f, "tail_lines": 5})
                                   ["result"]["structuredContent"] for f in ("", "_1", "zzz")}}
    return out


def tokens(text: str) -> list[str]:
    """Runs of ASCII letters and digits, lower-cased (corpus.py's docstring)."""
    return [t.lower() for t in re.findall(r"[A-Za-z0-9]+", text)]


def bm25_hits(pages: dict[str, list[str]], query: str, limit: int) -> list[str]:
    """The ids of the ``limit`` best ``pages`` (id -> tokens) for ``query`` by BM25 (k1 1.2,
    b 0.75, Lucene's idf); ties by id."""
    n, average = len(pages), sum(map(len, pages.values())) / len(pages)
    scores = {}
    for term in dict.fromkeys(tokens(query)):
        holding = {doc: words.count(term) for doc, words in pages.items() if term in words}
        idf = math.log(1 + (n - len(holding) + 0.5) / (len(holding) + 0.5))
        for doc, tf in holding.items():
            norm = K1 * (1 - B + B * len(pages[doc]) / average)
            scores[doc] = scores.get(doc, 0.0) + idf * (tf * (K1 + 1)) / (tf + norm)
    return sorted(scores, key=lambda doc: (-scores[doc], doc))[:limit]


def test_every_search_recipe_is_tested():
    recipes = load_recipes(RECIPES, transport=None)
    assert sorted(r.name for r in recipes if r.workload == "search") == list(NAMES)


def test_every_build_holds_the_same_corpus(built):
    digests = {name: hashlib.sha256((corpus / "index.json").read_bytes()).hexdigest()
               for name, (_, corpus) in built.items()}
    assert len(set(digests.values())) == 1, digests


def test_search_docs_answers_the_same_hits_in_every_language(built, answers):
    corpus = next(iter(built.values()))[1]
    pages = {p.stem: tokens(p.read_text()) for p in sorted((corpus / "docs").glob("*.md"))}
    expected = [bm25_hits(pages, query, LIMIT) for query in QUERIES]
    assert all(expected[:-1]) and expected[-1] == []  # every query but the last finds pages
    assert len({hit for hits in expected for hit in hits}) > 5 * LIMIT  # and not the same ones
    for name, got in answers.items():
        assert got["hits"] == expected, name


def test_read_file_refuses_paths_outside_its_root(built, answers):
    """Each refusal is a tool error or a JSON-RPC error, without the file's first line."""
    for name, got in answers.items():
        corpus = built[name][1]
        manual = (corpus / WORKLOAD.calls[1].arguments["path"]).read_text()
        assert len(manual) == 1 << 20 and got["manual"] == manual, name
        for path, answer in got["read"].items():
            outside = (corpus / path).resolve()
            assert not outside.is_relative_to(corpus.resolve()) and outside.exists()
            first = outside.read_text().splitlines()[0] if outside.is_file() else None
            assert "error" in answer or answer["result"].get("isError"), (name, path, answer)
            assert first is None or first not in json.dumps(answer), (name, path, answer)


def test_run_tests_returns_the_tail_of_the_scripts_output(built, answers):
    corpus = next(iter(built.values()))[1]
    for test_filter in ("", "_1", "zzz"):
        printed = subprocess.run(["sh", "tests/run.sh", test_filter], cwd=corpus, check=True,
                                 capture_output=True, text=True).stdout.splitlines()
        expected = {"exit_code": 0, "lines": len(printed), "tail": "\n".join(printed[-5:])}
        for name, got in answers.items():
            assert got["tests"][test_filter] == expected, (name, test_filter)


def test_a_server_whose_index_does_not_load_never_answers(built, tmp_path):
    """Sent initialize on a corpus folder whose index.json is cut short, each server exits
    with an error of its own accord, stdin still open, without answering."""
    (tmp_path / "index.json").write_text('{"docs": [')
    for name, (command, corpus) in built.items():
        argv = [str(tmp_path) if a == str(corpus) else a for a in command.argv]
        assert argv != command.argv
        proc = subprocess.Popen(argv, cwd=command.cwd, env=command.environment(), bufsize=0,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        try:
            with suppress(BrokenPipeError):  # it may have exited already
                proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
            code = proc.wait(timeout=ANSWER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            proc.kill()
            stdout = proc.communicate()[0]
        assert code not in (None, 0) and stdout == b"", (name, code, stdout[:200])


def test_read_file_refuses_a_symbolic_link_out_of_its_root(built, tmp_path):
    """On a corpus folder of the index and a link to /etc/passwd, reading the link is refused."""
    (tmp_path / "leak").symlink_to("/etc/passwd")
    first = Path("/etc/passwd").read_text().splitlines()[0]
    for name, (command, corpus) in built.items():
        (tmp_path / "index.json").unlink(missing_ok=True)
        (tmp_path / "index.json").symlink_to(corpus / "index.json")
        argv = [str(tmp_path) if a == str(corpus) else a for a in command.argv]
        with stdio_client(replace(command, argv=argv), tmp_path / f"{name}.log") as request:
            answer = request({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                              "params": {"name": "read_file", "arguments": {"path": "leak"}}})
        assert "error" in answer or answer["result"].get("isError"), (name, answer)
        assert first not in json.dumps(answer), (name, answer)
