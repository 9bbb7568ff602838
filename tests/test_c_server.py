"""The C floor server (servers/c/server.c) and the C cold-start harness (benchmarks/harness.c):
compiled with `cc` into a temporary folder, driven over real pipes. Without `cc` the tests
skip; with MCPSTART_REQUIRE_ALL=1 (CI) they fail instead."""

import json
import random
import selectors
import subprocess
from pathlib import Path

import pytest

from conftest import require_programs

ROOT = Path(__file__).parent.parent
SERVER_C = ROOT / "servers" / "c" / "server.c"
HARNESS_C = ROOT / "benchmarks" / "harness.c"
MIB = 1024 * 1024
LEGACY = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
SUPPORTED = [*LEGACY, "2026-07-28"]
META = "io.modelcontextprotocol/protocolVersion"


def compile_c(source: Path, folder: Path) -> Path:
    """Compile ``source`` with ``cc -O2 -Wall -Wextra``; fails the test on any warning."""
    require_programs("cc")
    binary = folder / source.stem
    done = subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-o", str(binary), str(source)],
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return binary


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Path:
    return compile_c(SERVER_C, tmp_path_factory.mktemp("c-server"))


def exchange(server: Path, *lines: bytes | str | dict, end: bytes = b"\n"):
    """Send every line (dicts as compact JSON), close stdin, and return (the answers as raw
    lines, the exit status). Each line is terminated with ``end``."""
    data = b"".join((json.dumps(m).encode() if isinstance(m, dict) else
                     m.encode() if isinstance(m, str) else m) + end for m in lines)
    done = subprocess.run([str(server)], input=data, capture_output=True, timeout=60)
    assert done.stderr == b""
    out = done.stdout
    assert out == b"" or out.endswith(b"\n")
    return out.splitlines(), done.returncode


def ask(server: Path, *messages) -> list[dict]:
    """The parsed answers to ``messages``; the server must exit 0 at EOF."""
    raw, code = exchange(server, *messages)
    assert code == 0
    return [json.loads(line) for line in raw]


def request(id_, method, params=None) -> dict:
    message = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return message


def call(text: str, id_=1, meta: str | None = None, ensure_ascii=True) -> bytes:
    """A tools/call reverse_text request line, ``text`` JSON-encoded as asked."""
    params = {"name": "reverse_text", "arguments": {"text": text}}
    if meta:
        params["_meta"] = {META: meta, "io.modelcontextprotocol/clientCapabilities": {}}
    return json.dumps(request(id_, "tools/call", params), ensure_ascii=ensure_ascii).encode()


def reversed_text(answer: dict) -> str:
    result = answer["result"]
    assert result["isError"] is False and len(result["content"]) == 1
    assert result["content"][0]["type"] == "text"
    return result["content"][0]["text"]


@pytest.mark.parametrize("raw_id", ['7', '"abc"', '1.5', '-3', '0', '1e3', '"x\\"y\\u00e9"'])
def test_ids_are_echoed_verbatim(server, raw_id):
    raw, code = exchange(server, f'{{"jsonrpc":"2.0","id":{raw_id},"method":"ping"}}')
    assert code == 0
    assert raw == [f'{{"jsonrpc":"2.0","id":{raw_id},"result":{{}}}}'.encode()]


@pytest.mark.parametrize("requested,expected", [(r, r) for r in LEGACY] +
                         [("2026-07-28", "2025-11-25"), ("1999-01-01", "2025-11-25")])
def test_initialize_negotiates_the_revision(server, requested, expected):
    params = {"protocolVersion": requested, "capabilities": {},
              "clientInfo": {"name": "t", "version": "0"}}
    [answer] = ask(server, request(1, "initialize", params))
    assert answer == {"jsonrpc": "2.0", "id": 1, "result": {
        "protocolVersion": expected, "capabilities": {"tools": {}},
        "serverInfo": {"name": "mcpstart-c-floor", "version": "1.0.0"}}}


def test_tools_list(server):
    [answer] = ask(server, request("l", "tools/list", {}))
    [tool] = answer["result"]["tools"]
    assert tool["name"] == "reverse_text" and tool["description"]
    assert tool["inputSchema"] == {"type": "object", "properties": {"text": {"type": "string"}},
                                   "required": ["text"]}
    assert "resultType" not in answer["result"]


def test_reverses_five_mib_of_ascii(server):
    text = "".join(random.Random(5).choices("abcdefghij \"\\/XYZ0123", k=5 * MIB))
    raw, code = exchange(server, call(text))
    assert code == 0 and len(raw) == 1 and len(raw[0]) > 5 * MIB
    assert reversed_text(json.loads(raw[0])) == text[::-1]


@pytest.mark.parametrize("text", [
    "a\U0001F600b",                   # emoji: a surrogate pair when escaped
    "e\u0301x",                       # e + combining acute: reversed by code points
    "日本語のテキスト",                  # CJK
    'q"b\\c/d\ne\tf\r\x00\x01\x1f\x7f\x08\x0c',  # quotes, backslash, controls
    "\u2028\u2029 \U0010FFFF\u00e9",  # edges of UTF-8 lengths
    "",
])
@pytest.mark.parametrize("ensure_ascii", [True, False], ids=["escaped", "utf8"])
def test_reverses_by_code_points(server, text, ensure_ascii):
    [answer] = ask(server, call(text, ensure_ascii=ensure_ascii))
    assert reversed_text(answer) == text[::-1]


def test_surrogate_pair_escape_is_one_code_point(server):
    raw = br'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"reverse_text",' \
          br'"arguments":{"text":"x\ud83d\ude00y\u00E9"}}}'
    [answer] = ask(server, raw)
    assert reversed_text(answer) == "\u00e9y\U0001F600x"


def test_lone_surrogates_are_kept(server):
    [lone] = ask(server, br'{"id":1,"method":"tools/call","params":{"name":"reverse_text",'
                         br'"arguments":{"text":"a\ud800b\udc00"}}}')
    assert reversed_text(lone) == "\udc00b\ud800a"  # kept, written back as \uXXXX escapes



def test_server_discover(server):
    meta = {META: "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    [answer] = ask(server, request("discover-1", "server/discover", {"_meta": meta}))
    assert answer["id"] == "discover-1"
    assert answer["result"] == {
        "resultType": "complete", "supportedVersions": SUPPORTED,
        "capabilities": {"tools": {}}, "ttlMs": 3600000, "cacheScope": "public",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "mcpstart-c-floor",
                                                         "version": "1.0.0"}}}


def test_modern_envelope_tools_call_as_first_message(server):
    answers = ask(server, call("héllo😀", id_="call-1", meta="2026-07-28"),
                  request(2, "tools/list", {"_meta": {META: "2026-07-28"}}))
    assert answers[0]["id"] == "call-1" and answers[0]["result"]["resultType"] == "complete"
    assert reversed_text(answers[0]) == "😀olléh"
    listed = answers[1]["result"]
    assert listed["resultType"] == "complete" and listed["tools"][0]["name"] == "reverse_text"
    assert listed["ttlMs"] == 3600000 and listed["cacheScope"] == "public"


@pytest.mark.parametrize("method", ["tools/call", "server/discover", "tools/list"])
def test_unsupported_modern_revision_is_32022(server, method):
    [answer] = ask(server, request(9, method, {"_meta": {META: "1900-01-01"},
                                               "name": "reverse_text", "arguments": {"text": "x"}}))
    assert answer == {"jsonrpc": "2.0", "id": 9, "error": {
        "code": -32022, "message": "Unsupported protocol version",
        "data": {"supported": SUPPORTED, "requested": "1900-01-01"}}}


def test_legacy_revision_in_the_envelope_is_answered_as_legacy(server):
    [answer] = ask(server, call("ab", meta="2025-11-25"))
    assert reversed_text(answer) == "ba" and "resultType" not in answer["result"]


@pytest.mark.parametrize("message,code", [
    (request(1, "resources/list"), -32601),
    (request(1, "tools/call", {"name": "nope", "arguments": {"text": "x"}}), -32602),
    (request(1, "tools/call", {"name": "reverse_text", "arguments": {}}), -32602),
    (request(1, "tools/call", {"name": "reverse_text", "arguments": {"text": 5}}), -32602),
    (request(1, "tools/call", {"arguments": {"text": "x"}}), -32602),
    (request(1, "tools/call", [1]), -32602),
    (request(1, "ping", {"_meta": {META: 20260728}}), -32602),
])
def test_errors_keep_the_id(server, message, code):
    [answer] = ask(server, message)
    assert answer["id"] == 1 and answer["error"]["code"] == code and answer["error"]["message"]
    assert "result" not in answer


def test_unknown_tool_is_named(server):
    [answer] = ask(server, request(1, "tools/call", {"name": 'bad"name', "arguments": {}}))
    assert answer["error"]["message"] == 'Unknown tool: bad"name'


# JSON text is UTF-8 (RFC 8259 §8.1): a line with invalid UTF-8 is not JSON
INVALID_UTF8 = [b'{"id":"\xff","method":"ping"}', b'{"id":1,"method":"p\xc0\xaf"}',
                b'{"a":"\xed\xa0\x80"}', b'{"a":"\xf4\x90\x80\x80"}', b'{"a":"\xe2\x82"}',
                b'{"a":"\xf0\x9f\x98"}', b'{"a":"\x80"}']


@pytest.mark.parametrize("line", [b"garbage", b'{"id":1,', b'{"id":1,"method":"ping"} x',
                                  b'{"id":1,"method":"p\x01"}', b'{"id":01}', b'{"id":1 "a":2}',
                                  b'[' * 5000 + b']' * 5000, b'{"a":"\\x"}', b'{"a":"\\u12G4"}',
                                  *INVALID_UTF8])
def test_malformed_json_is_32700_with_id_null(server, line):
    [answer] = ask(server, line)
    assert answer == {"jsonrpc": "2.0", "id": None,
                      "error": {"code": -32700, "message": "Parse error"}}


@pytest.mark.parametrize("line,id_", [(b"[1,2]", None), (b'{"id":null,"method":"ping"}', None),
                                      (b'{"id":3,"method":5}', 3), (b'{"id":4}', 4)])
def test_invalid_requests_are_32600(server, line, id_):
    [answer] = ask(server, line)
    assert answer["id"] == id_ and answer["error"]["code"] == -32600


def test_notifications_and_responses_get_no_answer(server):
    answers = ask(server, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                  {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "reverse_text"}},
                  {"jsonrpc": "2.0", "id": 5, "result": {}},
                  request(6, "ping"))
    assert answers == [{"jsonrpc": "2.0", "id": 6, "result": {}}]


def test_crlf_blank_lines_and_a_last_line_without_newline(server):
    raw, code = exchange(server, request(1, "ping"), b"", b"   ", request(2, "tools/list"), end=b"\r\n")
    assert code == 0 and [json.loads(r)["id"] for r in raw] == [1, 2]
    raw, code = exchange(server, json.dumps(request(3, "ping")), end=b"")
    assert code == 0 and json.loads(raw[0])["id"] == 3


def test_exits_0_on_eof_without_input(server):
    assert exchange(server) == ([], 0)


def test_answers_each_request_before_stdin_closes(server):
    """No output buffering: each answer arrives while the session is still open."""
    proc = subprocess.Popen([str(server)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        for id_ in range(3):
            proc.stdin.write(call("abc", id_=id_) + b"\n")
            proc.stdin.flush()
            assert sel.select(timeout=10), "no answer within 10 s"
            answer = json.loads(proc.stdout.readline())
            assert answer["id"] == id_ and reversed_text(answer) == "cba"
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0
    proc.stdout.close()


def test_harness_times_the_server(server, tmp_path):
    harness = compile_c(HARNESS_C, tmp_path)
    done = subprocess.run([str(harness), "5", "3", str(server)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    times = [float(line) for line in done.stdout.splitlines()]
    assert len(times) == 3 and all(0 < t < 1000 for t in times)
    assert all(len(line.split(".")[1]) == 4 for line in done.stdout.splitlines())
    failed = subprocess.run([str(harness), "0", "1", "true"], capture_output=True, text=True)
    assert failed.returncode == 1 and "before a complete line" in failed.stderr
