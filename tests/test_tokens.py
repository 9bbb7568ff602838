"""Tool-list tokens: the count of a known tool list, checked against a second implementation of
the same encoding (tiktoken, OpenAI's own, fed the o200k_base ranks bpe-openai ships: tiktoken
checks their SHA-256 against the one it pins, so the ranks are the real encoding's)."""

import json

import pytest

from mcpstart.measure import tokens

from conftest import benchmark, unavailable

pytestmark = pytest.mark.tokenizer

REVERSE_TEXT = [{"name": "reverse_text", "description": "Reverse a text.",
                 "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                                 "required": ["text"]}}]

TOOL_LISTS = [
    REVERSE_TEXT,
    [{"name": "get_current_time", "description": "Get the current time in a specific "
      "timezone", "inputSchema": {"type": "object", "properties": {"timezone": {
          "type": "string", "description": "IANA timezone name (e.g. 'America/New_York', "
          "'Europe/London')."}}, "required": ["timezone"]}},
     {"name": "convert_time", "inputSchema": {"type": "object"}}],
    [{"name": "übersetzen", "description": "Übersetzt Text ins Japanische: 日本語に翻訳します 😀, "
      "with  double  spaces,\nnewlines\tand tabs; 1234567 digits and 'quotes'.",
      "inputSchema": {"type": "object", "properties": {"text": {"type": "string",
                                                                "maxLength": 10000}}}}],
    [{"name": f"tool_{n}", "description": "x" * n, "inputSchema": {"type": "object"}}
     for n in range(0, 400, 37)],
]


def require_tokenizer():
    try:
        tokens.encode_length("")
    except tokens.Unavailable as err:
        unavailable(str(err))


@pytest.fixture(scope="module")
def tiktoken_o200k():
    """tiktoken's o200k_base, loaded offline from the ranks bpe-openai ships (the tool figures'
    check, benchmarks/tools_check.py, counts with the same)."""
    try:
        return benchmark("tools_check").o200k()
    except ImportError as err:
        unavailable(f"{err.name} is not installed (the test extra has it)")


def test_the_reference_tool_in_openais_shape_and_its_count():
    require_tokenizer()
    shaped = tokens.openai_tools(REVERSE_TEXT + ["not an object"])
    assert shaped == [{"type": "function", "function": {
        "name": "reverse_text", "description": "Reverse a text.",
        "parameters": REVERSE_TEXT[0]["inputSchema"]}}]
    counted = tokens.count(REVERSE_TEXT)
    text = json.dumps(shaped, separators=(",", ":"))
    assert counted["bytes"] == len(text) == 179
    assert counted["count"] == 40
    assert counted["per_tool"] == [{"name": "reverse_text", "tokens": 39, "bytes": 177}]
    assert (counted["encoding"], counted["tokenizer"]) == ("o200k_base", "bpe-openai")


@pytest.mark.parametrize("tools", TOOL_LISTS, ids=["reference", "time", "unicode", "many"])
def test_the_count_matches_tiktoken_on_the_same_ranks(tools, tiktoken_o200k):
    require_tokenizer()
    counted = tokens.count(tools)
    text = json.dumps(tokens.openai_tools(tools), separators=(",", ":"), ensure_ascii=False)
    assert counted["bytes"] == len(text.encode())
    assert counted["count"] == len(tiktoken_o200k.encode(text)) > 0
    for entry, tool in zip(counted["per_tool"], tokens.openai_tools(tools)):
        alone = json.dumps(tool, separators=(",", ":"), ensure_ascii=False)
        assert entry["tokens"] == len(tiktoken_o200k.encode(alone))


def test_without_the_tokenizer_the_count_is_unavailable_with_the_reason(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_bpe(name, *args, **kw):
        if name == "bpe_openai":
            raise ImportError(name)
        return real_import(name, *args, **kw)

    tokens._encoding.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_bpe)
    try:
        with pytest.raises(tokens.Unavailable, match=r"pip install 'mcpstart\[tokens\]'"):
            tokens.count(REVERSE_TEXT)
    finally:
        tokens._encoding.cache_clear()
