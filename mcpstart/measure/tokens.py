"""Tool-list tokens: what a server's tool definitions cost in a model's context, counted in
one named shape with one named tokenizer.

The shape: OpenAI's Chat Completions ``tools`` array, ``[{"type": "function", "function":
{"name", "description", "parameters"}}]`` (an MCP tool's ``inputSchema`` is the function's
``parameters``; a tool without a description has none), serialised as compact JSON (no
spaces, non-ASCII as UTF-8: what ``JSON.stringify`` writes). The tokenizer: o200k_base, the
encoding of OpenAI's GPT-4o, GPT-4.1, o-series and GPT-5 models, from bpe-openai (GitHub's
Rust ``bpe`` crate with a tiktoken-compatible API; its wheel ships the encoding's ranks, so it
counts offline, where tiktoken downloads them on first use). Other model families (Claude,
Gemini, Llama) tokenize differently and every client wraps the definitions in a prompt of its
own, so for them the count is an estimate.

bpe-openai's wheel is 41.5 MB: it is the ``tokens`` extra (``pip install 'mcpstart[tokens]'``);
without it the count is None with the reason.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version

from ..transports.jsonrpc import json_bytes

ENCODING = "o200k_base"
TOKENIZER = "bpe-openai"
SHAPE = "OpenAI Chat Completions tools array, compact JSON"
ESTIMATE = ("exact for OpenAI's o200k_base models (GPT-4o, GPT-4.1, o-series, GPT-5) as the "
            "array is sent; an estimate for other model families and for the prompt a client "
            "wraps around it")


class Unavailable(RuntimeError):
    """The tokenizer cannot be used (the ``tokens`` extra is not installed)."""


def openai_tools(tools: list) -> list[dict]:
    """MCP tool definitions (``tools/list`` entries) as OpenAI's tools array; entries that are
    not objects are left out."""
    shaped = []
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        function = {"name": tool.get("name")}
        if tool.get("description") is not None:
            function["description"] = tool["description"]
        function["parameters"] = tool.get("inputSchema", {"type": "object", "properties": {}})
        shaped.append({"type": "function", "function": function})
    return shaped


@cache
def _encoding():
    try:
        import bpe_openai
    except ImportError:
        raise Unavailable(f"the tokenizer is not installed: pip install 'mcpstart[tokens]' "
                          f"({TOKENIZER}, which ships {ENCODING})") from None
    return bpe_openai.get_encoding(ENCODING)


def encode_length(text: str) -> int:
    """Tokens of ``text`` in o200k_base (special tokens read as plain text).

    Raises:
        Unavailable: the tokenizer is not installed.
    """
    return len(_encoding().encode(text))


def count(tools: list) -> dict:
    """The tokens of a server's tool list.

    Returns:
        ``{encoding, tokenizer, tokenizer_version, shape, note, count, bytes, per_tool:
        [{name, tokens, bytes}]}``: ``count`` and ``bytes`` are of the whole array (what a
        client sends), each ``per_tool`` entry of that tool's element alone.

    Raises:
        Unavailable: the tokenizer is not installed.
    """
    shaped = openai_tools(tools)
    whole = json_bytes(shaped)
    per_tool = []
    for entry in shaped:
        data = json_bytes(entry)
        per_tool.append({"name": entry["function"]["name"],
                         "tokens": encode_length(data.decode()), "bytes": len(data)})
    try:
        release = version(TOKENIZER)
    except PackageNotFoundError:
        release = None
    return {"encoding": ENCODING, "tokenizer": TOKENIZER, "tokenizer_version": release,
            "shape": SHAPE, "note": ESTIMATE, "count": encode_length(whole.decode()),
            "bytes": len(whole), "per_tool": per_tool}


def fill(row, runs: list[dict]) -> None:
    """Set ``row.tools["tokens"]`` (a ServerResult) from the last tool list of ``runs`` (cold
    start samples) and ``row.instructions`` from the last initialize answer; tokens None
    with the reason in ``not_measured`` without the tokenizer."""
    _instructions(row, next((r for r in reversed(runs) if r.get("handshake") is not None),
                            None))
    listing = next((r["tools"] for r in reversed(runs) if r.get("tools")), None)
    if row.tools is None or listing is None:
        return
    try:
        row.tools["tokens"] = count(listing.tools)
    except Unavailable as err:
        row.tools["tokens"] = None
        row.skip_block("tools.tokens", str(err))


def _instructions(row, run: dict | None) -> None:
    """``row.instructions``: ``{bytes, tokens}`` of the ``instructions`` string of the
    initialize answer in ``run`` (MCP 2025-03-26 and later: how to use the server, which a
    client may add to the model's system prompt, so its tokens are context like the tool
    definitions'); UTF-8 bytes, and tokens in o200k_base as text (None without the
    tokenizer, the reason in ``not_measured``); 0 and 0 when the answer holds none (or not
    a string); None without an answer."""
    if run is None:
        return
    text = run.get("instructions")
    text = text if isinstance(text, str) else ""
    row.instructions = {"bytes": len(text.encode("utf-8", "surrogatepass")), "tokens": 0}
    if text:
        try:
            row.instructions["tokens"] = encode_length(text)
        except Unavailable as err:
            row.instructions["tokens"] = None
            row.skip_block("instructions.tokens", str(err))
