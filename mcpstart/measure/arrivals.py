"""The open-loop rate's schedule (the "open" load scenario, run by locust_mcp.py's users):
requests started at fixed intended times whatever the answers, and each one's latency
measured from its intended send time, so a stall shows in every request scheduled behind it
(coordinated omission, Gil Tene's "How NOT to Measure Latency": a closed loop sends nothing
while it waits, so the requests a stall delays are never timed). Plain Python: the engine
passes its clock, its sleep and its way of starting a request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator


def slots(start: float, duration_s: float, rate: float, users: int,
          index: int) -> Iterator[float]:
    """The intended send times (seconds, the clock of ``start``) of user ``index`` of
    ``users`` (0-based) in one schedule at ``rate`` requests/s in all: slot j at
    ``start + j / rate``, user ``index`` taking j = index, index + users, ...; every slot
    before ``start + duration_s`` (``ceil(rate * duration_s)`` in all over the users)."""
    j = index
    while (at := start + j / rate) < start + duration_s:
        yield at
        j += users


def open_loop(times: Iterable[float], clock: Callable[[], float],
              sleep: Callable[[float], None], begin: Callable[[float], None]) -> int:
    """``begin(intended)`` at each intended time of ``times`` (ascending), sleeping until it;
    ``begin`` must start the request and return at once (never wait for its answer), so a
    late answer delays no later send. A send behind its time (the engine busy) goes at once,
    its lateness counted in its latency (``late_ms``). Returns how many were begun."""
    count = 0
    for intended in times:
        wait = intended - clock()
        if wait > 0:
            sleep(wait)
        begin(intended)
        count += 1
    return count


def late_ms(intended: float, now: float) -> float:
    """Milliseconds from a request's intended send time to ``now`` (its send, or its
    answer: the latency the open loop records), both on one clock in seconds."""
    return (now - intended) * 1000
