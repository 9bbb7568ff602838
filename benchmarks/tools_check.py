"""Are mcpstart's tool figures the server's? The tool count, the tools/list answer's bytes
(the answers' lines as written, line ends excluded; over HTTP the JSON body or the SSE
event's data), the merged definitions' bytes (compact JSON), the initialize answer's
instructions (UTF-8 bytes and o200k_base tokens), and the tool list's bytes and tokens in
OpenAI's Chat Completions tools shape (measure/tokens.py: compact JSON, o200k_base),
as mcpstart reports them (measure/warm.py ``tool_session``'s ``tools`` block, the tokens from
a cold start's list by tokens.fill, as a run does), against a raw probe (benchmarks/raw_mcp.py:
its own tools/list to the last page, its own shaping) counted by tiktoken (OpenAI's
tokenizer, fed the o200k_base ranks bpe-openai ships; tiktoken checks them against the
SHA-256 it pins, so they are the real encoding's).

Prints per server each figure of both, their ratio and met/MISSED against the target: equal.
Asserts nothing. Needs tiktoken and bpe-openai (the test extra).

Usage: python benchmarks/tools_check.py [--rounds 1] [NAMES...]
NAMES: reference recipes (default: all, stdio and HTTP).
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import json
import os
import tempfile
from dataclasses import replace
from functools import cache
from pathlib import Path

import raw_mcp
from checks import arguments, header, load_average, reference_builds, verdict
from mcpstart.measure import tokens
from mcpstart.measure.client import Skips
from mcpstart.measure.cold import cold_start
from mcpstart.measure.memory import SettleRule
from mcpstart.measure.settings import Settings
from mcpstart.measure.warm import tool_session
from mcpstart.results import ServerResult
from mcpstart.transports.http import HttpTransport
from mcpstart.transports.session import Traffic

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
"""The address tiktoken loads o200k_base from; its cache file is named by this address's SHA-1."""
FIGURES = ("count", "list_bytes", "definitions_bytes", "tokens_bytes", "tokens",
           "instructions_bytes", "instructions_tokens")


@cache
def o200k():
    """tiktoken's o200k_base, loaded offline from the ranks bpe-openai ships.

    Raises:
        ImportError: tiktoken or bpe-openai is not installed.
    """
    import tiktoken

    ranks = gzip.decompress((importlib.resources.files("bpe_openai") / "data"
                             / "o200k_base.tiktoken.gz").read_bytes())
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / hashlib.sha1(O200K_URL.encode()).hexdigest()).write_bytes(ranks)
        previous = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = folder
        try:
            return tiktoken.get_encoding("o200k_base")
        finally:
            if previous is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = previous


def compact(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def raw_figures(command, transport: str) -> dict[str, int]:
    """The raw probe's figures (FIGURES) of one fresh session."""
    tools, list_bytes, cursor = [], 0, None
    with raw_mcp.client(command, transport) as plain:
        while True:
            answer = plain.request("tools/list", {} if cursor is None else {"cursor": cursor})
            tools += answer.message["result"]["tools"]
            list_bytes += answer.size_bytes
            cursor = answer.message["result"].get("nextCursor")
            if cursor is None:
                break
        instructions = plain.initialized.message["result"].get("instructions")
    shaped = compact([{"type": "function", "function": {
        "name": tool["name"], **({"description": tool["description"]}
                                 if tool.get("description") is not None else {}),
        "parameters": tool.get("inputSchema", {"type": "object", "properties": {}})}}
        for tool in tools])
    return {"count": len(tools), "list_bytes": list_bytes,
            "definitions_bytes": len(compact(tools)), "tokens_bytes": len(shaped),
            "tokens": len(o200k().encode(shaped.decode(), disallowed_special=())),
            "instructions_bytes": len((instructions or "").encode()),
            "instructions_tokens": len(o200k().encode(instructions or "", disallowed_special=()))}


def mcpstart_figures(command, transport: str) -> dict[str, int]:
    """mcpstart's figures: a warm session's ``tools`` block (memory not waited for: a settle
    rule of 0 s) with the tokens of a cold start's list, as a run fills them."""
    settings = replace(Settings(), round_trips=0, payload_bytes=1024, runs=1, warmup=0,
                       settle=SettleRule(min_s=0, max_s=0))
    if transport == "http":
        settings = replace(settings, spawner=lambda c: HttpTransport(c))
    row = ServerResult("check", transport)
    tool_session(command, settings, row, Skips(), Traffic())
    tokens.fill(row, [cold_start(command, settings, Skips())])
    block = row.tools
    return {"count": block["count"], "list_bytes": block["list_bytes"],
            "definitions_bytes": block["definitions_bytes"],
            "tokens_bytes": block["tokens"]["bytes"], "tokens": block["tokens"]["count"],
            "instructions_bytes": row.instructions["bytes"],
            "instructions_tokens": row.instructions["tokens"]}


def compare(command, transport: str) -> dict[str, dict[str, int]]:
    """{"mcpstart": figures, "raw": figures} (FIGURES)."""
    return {"mcpstart": mcpstart_figures(command, transport),
            "raw": raw_figures(command, transport)}


def main() -> None:
    args = arguments(__doc__, rounds=1)
    builds = reference_builds(args.names)
    print(f"{args.rounds} round(s), servers in turn; target: equal; {load_average()} at start")
    print(header("raw + tiktoken"))
    for _ in range(args.rounds):
        for name, (transport, command) in builds.items():
            found = compare(command, transport)
            for figure in FIGURES:
                mine, theirs = found["mcpstart"][figure], found["raw"][figure]
                print(verdict(name, figure, mine, theirs, mine == theirs))
    print(f"{load_average()} at the end")


if __name__ == "__main__":
    main()
