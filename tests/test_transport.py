"""The transport's timed start: the rehearsal before the clock spawns nothing, and a first
message written before the spawn arrives whole even when the pipe cannot hold it."""

import os
import sys
import time

import psutil
import pytest

from mcpstart.command import Command
from mcpstart.transports.stdio import StdioTransport, prepare, rehearse

ECHO_LENGTH = "import sys; print(len(sys.stdin.buffer.readline()))"


def test_the_rehearsal_spawns_nothing():
    prepared = prepare(Command([sys.executable, "-c", ECHO_LENGTH]))
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    rehearse(prepared)
    after = {p.pid for p in psutil.Process().children(recursive=True)}
    for fd in (*prepared.child_fds, *prepared.parent_fds):
        os.close(fd)
    assert after == before


@pytest.mark.e2e  # a real timing: a real pipe's start does not block
def test_a_first_message_larger_than_the_pipe_arrives_whole():
    message = b"x" * 200_000 + b"\n"  # a pipe holds 64 KiB: most of it is written later
    transport = StdioTransport(Command([sys.executable, "-c", ECHO_LENGTH]))
    started = time.monotonic()
    transport.start(message, wait_s=10)
    try:
        lines = []
        while not lines and transport.output_open:
            lines = transport.receive(10)
        assert [line.data for line in lines] == [str(len(message)).encode()]
        assert time.monotonic() - started < 5  # the start did not block with the rest unsent
        assert transport.t0_ns < lines[0].at_ns
    finally:
        transport.close()
        os.waitpid(transport.pid, 0)
