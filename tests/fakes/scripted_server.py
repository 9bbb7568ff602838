"""The harness's mutated server as a real process: tests/mutations.py's MutatedServer over real
pipes, each Out event done for real (writes with their pauses, closing stdout or stdin, an
exit with a code or by a signal). Usage: scripted_server.py '[["kind", "method"], ...]'
[--child-holds-stdout] [--ignore-term]."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mutations import Mutation, MutatedServer  # noqa: E402

plan = [Mutation(kind, method) for kind, method in json.loads(sys.argv[1])]
server = MutatedServer(tuple(plan))
if "--ignore-term" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if "--child-holds-stdout" in sys.argv:  # a child that keeps the pipes open, and lives on
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
stdin = os.fdopen(0, "rb", buffering=0)
buffered = b""


def perform(outs) -> None:
    began = time.monotonic()
    for out in outs:
        delay = began + out.after_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        if out.kind == "stdout":
            os.write(1, out.data)
        elif out.kind == "stderr":
            os.write(2, out.data)
        elif out.kind == "close_stdout":
            os.close(1)
        elif out.kind == "close_stdin":
            os.close(0)  # reads nothing more (answers what it has), and runs on
        elif out.kind == "exit" and out.signal:
            os.kill(os.getpid(), out.signal)
        elif out.kind == "exit":
            os._exit(out.code)


while True:
    try:
        chunk = stdin.read(1 << 16)
    except OSError:  # it closed its stdin itself
        time.sleep(600)
    if not chunk:
        perform(server.eof())
        break
    buffered += chunk
    while b"\n" in buffered:
        raw, buffered = buffered.split(b"\n", 1)
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        perform(server.answer(message))
