"""What an editor's setup costs, under the table: several sessions at once
(``startup.sessions``) and the servers' tools against the clients' tool caps and token
budgets (summed over every server of a results file, as a config starts them all).

Caps and budgets, each with its source (docs/configs.md, "Tool lists in tokens"); a client counts
its own built-in tools against its cap too, so a set that fits here can still be cut short.
"""

from __future__ import annotations

from collections.abc import Callable

from ..results import dig, name_of, number_or_none, servers

TOOL_CAPS = (
    ("Cursor", 40, "sends the agent its first 40 MCP tools (modelcontextprotocol/.github "
                   "discussion #360; docs.cursor.com, MCP, tool quantity)"),
    ("Goose until Aug 2026", 50, "warned past 5 extensions or 50 tools (aaif-goose/goose#2319; "
                                 "removed by #10841)"),
    ("Windsurf", 100, "\"Cascade has a limit of 100 total tools\" (docs.windsurf.com, "
                      "cascade/mcp)"),
    ("VS Code", 128, "\"You may not include more than 128 tools in your request\" (built-in "
                     "tools included; microsoft/vscode#255532, "
                     "microsoft/vscode-copilot-release#11653)"),
)
"""(client, tools, source) of the clients that cap the tools a model is given."""
TOKEN_BUDGETS = (
    ("Claude Code", 20_000, "defers MCP tool definitions past 10% of the context window "
                            "(tool search, ENABLE_TOOL_SEARCH=auto; code.claude.com, MCP): "
                            "20k of a 200k window; Claude's tokenizer differs, so an "
                            "estimate"),
)
"""(client, tokens, source) of the clients that publish a token budget for tool definitions."""
MIB = 1024 * 1024


def _mib(value) -> str:
    number = number_or_none(value)
    return "-" if number is None else f"{number / MIB:.1f}"


def _ms(value) -> str:
    number = number_or_none(value)
    return "-" if number is None else f"{number:.0f}"


def caps_section(doc: dict, label: str | None) -> list[str]:
    """Every named server's tools together (and each alone where it passes a cap on its own)
    against TOOL_CAPS and TOKEN_BUDGETS, as a config starts them all; the reference servers
    (rows of a recipe's language) are no one's setup and are left out. [] when no such
    server listed tools, or for a file from before tokens were counted (its report reads as
    it did)."""
    rows = [s for s in servers(doc) if not s.get("language")]
    if not any(isinstance(s.get("tools"), dict) and "tokens" in s["tools"] for s in rows):
        return []
    counted = [(name_of(s), number_or_none(dig(s, "tools.count")),
                number_or_none(dig(s, "tools.tokens.count"))) for s in rows]
    counted = [c for c in counted if c[1] is not None]
    if not counted:
        return []
    tools = sum(c[1] for c in counted)
    tokens = [c[2] for c in counted]
    total_tokens = None if None in tokens else sum(tokens)
    lines = [f"Tool caps{f' ({label})' if label else ''}: {len(counted)} server(s) list "
             f"{tools:.0f} tool(s) together"
             + (f", {total_tokens:.0f} tokens (o200k_base, OpenAI's tools array)"
                if total_tokens is not None else "")]

    def judge(limit: float, total, each: Callable) -> str:
        if total is None:
            return "?"
        verdict = "fit" if total <= limit else f"exceed it by {total - limit:.0f}"
        alone = [f"{name} alone ({value:.0f})" for name, *values in counted
                 if (value := each(values)) is not None and value > limit]
        return verdict + (f"; over it: {', '.join(alone)}" if alone else "")

    for client, cap, source in TOOL_CAPS:
        lines.append(f"- {client} (cap {cap} tools): together they "
                     f"{judge(cap, tools, lambda v: v[0])}; {source}")
    for client, budget, source in TOKEN_BUDGETS:
        lines.append(f"- {client} (budget {budget} tokens): together they "
                     f"{judge(budget, total_tokens, lambda v: v[1])}; {source}")
    return lines


def sessions_section(doc: dict, label: str | None) -> list[str]:
    """The ``startup.sessions`` block in words: the last copy ready, the memory of all
    copies, the marginal session, per server and per copy; [] without one."""
    block = dig(doc, "startup.sessions")
    if not isinstance(block, dict):
        return []
    n = block.get("n")
    lines = [f"{n} sessions at once{f' ({label})' if label else ''}: "
             + ("each HTTP server serving them from one process"
                if "ready_ms" not in block and not block.get("error") else
                f"{n} copies of every stdio server spawned together, as that many editor "
                "windows do, beside one copy in the same rounds")]
    if block.get("error"):
        return lines + [f"- not measured: {block['error']}"]
    if "ready_ms" in block:
        lines += _copies(block, n)
    shared = block.get("shared")
    for name, entry in (shared.items() if isinstance(shared, dict) else []):
        lines.append(_shared(name, entry, n, block.get("per_server")))
    return lines


def _copies(block: dict, n) -> list[str]:
    lines = [f"- ready: the last copy after {_ms(dig(block, 'ready_ms.median'))} ms "
             f"(median of {dig(block, 'ready_ms.n')}; one copy of each: "
             f"{_ms(dig(block, 'single_ready_ms.median'))} ms)",
             f"- memory of all copies: PSS {_mib(block.get('pss_bytes'))} MiB, USS "
             f"{_mib(block.get('uss_bytes'))} MiB, RSS {_mib(block.get('rss_bytes'))} MiB "
             f"(one copy: PSS {_mib(block.get('single_pss_bytes'))} MiB); one more "
             f"session costs PSS {_mib(block.get('marginal_pss_bytes'))} MiB, USS "
             f"{_mib(block.get('marginal_uss_bytes'))} MiB"]
    per_server = block.get("per_server")
    for name, entry in (per_server.items() if isinstance(per_server, dict) else []):
        if not isinstance(entry, dict):
            continue
        copies = entry.get("copies") if isinstance(entry.get("copies"), list) else []
        each = ", ".join(f"#{c.get('copy')} {_ms(dig(c, 'ready_ms.median'))} ms "
                         f"{_mib(c.get('pss_bytes'))} MiB" for c in copies
                         if isinstance(c, dict))
        lines.append(f"- {name}: last copy ready {_ms(dig(entry, 'ready_ms.median'))} ms, "
                     f"PSS {_mib(entry.get('pss_bytes'))} MiB for {n}, one more "
                     f"+{_mib(entry.get('marginal_pss_bytes'))} MiB (per copy: {each})")
    return lines


def _shared(name: str, entry, n, per_server) -> str:
    """One HTTP process serving the n sessions, beside the n stdio copies of its peer."""
    if not isinstance(entry, dict):
        return f"- {name}: -"
    if entry.get("error"):
        return f"- {name}, one HTTP process for {n} sessions: not measured: {entry['error']}"
    line = (f"- {name}, one HTTP process for {n} sessions: all ready "
            f"{_ms(dig(entry, 'ready_ms.median'))} ms, PSS {_mib(entry.get('pss_bytes'))} "
            f"MiB, USS {_mib(entry.get('uss_bytes'))} MiB; one more session "
            f"+{_mib(entry.get('marginal_pss_bytes'))} MiB")
    peer = entry.get("stdio_peer")
    stdio = per_server.get(peer) if isinstance(per_server, dict) and peer else None
    if isinstance(stdio, dict):
        line += (f"; {n} stdio copies of {peer}: {_ms(dig(stdio, 'ready_ms.median'))} ms, "
                 f"PSS {_mib(stdio.get('pss_bytes'))} MiB")
    return line
