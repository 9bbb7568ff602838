"""The revision matrix of a server, each probe a fresh spawn (revisions.py): in a measure run
after its cold starts (``matrix``), and alone (``mcpstart revisions``: run.revisions_only, after
``first_start``; ``none_supported`` fails a row no revision of which is known to work)."""

from __future__ import annotations

from ..results import ServerResult
from ..transports.session import SessionError
from ..wire import initialize_request
from . import revisions, spawn
from .server import Server
from .settings import Settings


def matrix(server: Server, settings: Settings, source: str,
            probes: Settings | None = None) -> None:
    """The revision matrix of ``server`` (on ``probes``' spawner, default ``settings``'),
    each probe waiting what revisions.probe_wait derives from the server's counted
    ``source`` starts (``server.runs``' handshakes), into the row's protocol block with the
    warnings it gives."""
    starts = [r["handshake"] for r in server.runs
              if not r.get("warmup") and r.get("handshake") is not None]
    wait = revisions.probe_wait(settings, starts, source)
    protocol, warnings = revisions.derive(
        revisions.matrix(server.command, probes or settings, wait["s"]), wait)
    server.row.protocol = {**(server.row.protocol or {}), **protocol}
    server.row.warnings += warnings + revisions.contradicted(server.row.protocol)


def none_supported(row: ServerResult) -> None:
    """Fail ``row`` when its matrix found no revision supported, saying why."""
    protocol = row.protocol or {}
    if row.status != "ok" or protocol.get("supported_revisions"):
        return
    silent = [p for p in protocol.get("matrix") or [] if p["verdict"] == "unknown"]
    why = "every probe was refused or exited"
    if silent:
        why = (f"{len(silent)} of {len(protocol['matrix'])} probes got no answer in "
               f"{protocol['probe_wait']['s']:g} s (unknown: a longer --probe-timeout may tell)")
    row.fail(f"no revision is known to be supported: {why}")


def first_start(server: Server, settings: Settings) -> bool:
    """One start, unprobed, with the whole ``settings.timeout_s``: a first npx/uvx download
    finishes here instead of being cut off by a short probe (which can leave npx's cache
    broken). Its initialize answer, if one came, is kept in ``server.runs`` (as a counted
    start: the one the probes' wait is derived from) and names the negotiated revision;
    whatever else the server does is left for the probes to find. Returns False, with the
    row failed, when the program cannot be started at all (not found, no such working
    directory, an interpreter line naming no program)."""
    first = initialize_request(settings.requested_revision)
    try:
        with spawn.started([(server.command, first)], settings, timed=False) as (session,):
            try:
                answer = session.wait(1, settings.timeout_s, diagnose=False)
                result = answer.message.get("result")
                negotiated = result.get("protocolVersion") if isinstance(result, dict) else None
                server.runs.append({"handshake": (answer.at_ns - session.t0_ns) / 1e6,
                                    "negotiated_revision": negotiated})
                server.row.protocol["negotiated_revision"] = negotiated
            except SessionError:
                pass
            finally:
                session.shutdown(settings.probe_grace_s)
    except SessionError as err:
        server.row.fail(str(err))
        return False
    return True
