"""Which runtime's start-up profile a server gets: the first of RUNTIMES that applies to it
(a Python interpreter in its tree, a Go executable as its program, a JVM in its tree, node in
its tree; each module's ``applies``), and for a native program its dynamic loader's
(native_loader.py), run after the counted cold starts. Every profile block the server does
not get says why (``not_measured``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from . import go_init, imports, jvm_classes, native_loader, node_packages, runtime_heap
from .server import Server
from .settings import Settings

RUNTIMES = (imports, go_init, jvm_classes, node_packages)
WHY_NOT = {
    "imports": "profiled for servers whose tree runs a Python interpreter or node, or whose "
               "program is a Go executable, only",
    "classes": "read for servers whose tree runs a JVM (java) only",
}
"""Each profile block (a RUNTIMES module's BLOCK) and the reason a server lacks it."""


def chosen(server: Server):
    """The RUNTIMES module that profiles ``server``'s start, else None; the blocks it does
    not fill are marked not measured with WHY_NOT's reason, as is ``runtime_heap`` where
    the runtime's own heap figures are not read (runtime_heap.WHY_NOT)."""
    runtime = next((r for r in RUNTIMES if r.applies(server)), None)
    for block, reason in WHY_NOT.items():
        if runtime is None or block != runtime.BLOCK:
            server.row.skip_block(block, reason)
    if runtime not in (node_packages, jvm_classes, go_init):
        server.row.skip_block(runtime_heap.BLOCK, runtime_heap.WHY_NOT)
    return runtime


def profiles(server: Server, settings: Settings) -> list[Iterator[None]]:
    """The start-up profiles of ``server`` (each a module's ``measure``, not yet started): its
    runtime's (``chosen``) and the dynamic loader's (native_loader.py) where they apply."""
    runtime = chosen(server)
    found = [] if runtime is None else [runtime.measure(server, settings)]
    if native_loader.applies(server, runtime):
        found.append(native_loader.measure(server, settings))
    return found


def interleaved(profiles: list[tuple[Server, Iterator[None]]],
                before: Callable[[Server], None] = lambda server: None) -> None:
    """Run the servers' profiles (each the ``measure`` of its RUNTIMES module, which yields
    after each profiled start) round by round, one start of each server in turn, with
    ``before(server)`` ahead of each: a machine whose load drifts while they run then slows
    every server's profiled starts alike, so that compare of two servers' profiles (SDK
    variants of one run) sees their difference, not the drift."""
    pending = list(profiles)
    while pending:
        for server, profile in list(pending):
            before(server)
            try:
                next(profile)
            except StopIteration:
                pending.remove((server, profile))
