"""A native server's dynamic loader (measure/native_loader.py) on statistics and maps written
here: the last start of an exec chain, the objects mapped executable, which servers get the
profile (ELF files made here: one naming a loader, one static), the block's medians, a start
without statistics, and the why view's line."""

import os
import struct

from mcpstart.command import Command
from mcpstart.measure import attribution, go_init, imports, native_loader
from mcpstart.measure.server import Server
from mcpstart.measure.settings import Settings
from mcpstart.results import ServerResult
from mcpstart.views.why import why

STATS = """\
      4818:\t
      4818:\truntime linker statistics:
      4818:\t  total startup time in dynamic loader: 242704 cycles
      4818:\t            time needed for relocation: 50349 cycles (20.7%)
      4818:\t                 number of relocations: {relocations}
      4818:\t      number of relocations from cache: 7
      4818:\t        number of relative relocations: {relative}
      4818:\t           time needed to load objects: 22006 cycles (9.0%)
"""
EXIT = """\
      4818:\t
      4818:\truntime linker statistics:
      4818:\t           final number of relocations: 999
      4818:\tfinal number of relocations from cache: 99
"""
MAPS = """\
5581a000-5581b000 r--p 00000000 08:01 11 /srv/server/reverse-text
5581b000-5581c000 r-xp 00001000 08:01 11 /srv/server/reverse-text
7f00a000-7f0b2000 r-xp 00028000 08:01 22 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0b2000-7f0b3000 rw-p 00000000 00:00 0
7f0c0000-7f0c1000 r-xp 00001000 08:01 33 /tmp/plugin.so (deleted)
7f0d0000-7f0d2000 r-xp 00000000 00:00 0 [vdso]
7f0e0000-7f0f0000 r-xp 00001000 08:01 44 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
"""


def elf(path, interp: str | None):
    """A minimal little-endian ELF64 executable: the header and, with ``interp``, one
    ``PT_INTERP`` program header whose bytes are that path (ELF-64 Object File Format)."""
    phoff, count = 64, 1 if interp else 0
    header = (b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
              + struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, phoff if count else 0, 0, 0, 64,
                            56, count, 64, 0, 0))
    body = b""
    if interp:
        name = interp.encode() + b"\0"
        body = struct.pack("<IIQQQQQQ", 3, 4, 64 + 56, 0, 0, len(name), len(name), 1) + name
    path.write_bytes(header + body)
    path.chmod(0o755)
    return str(path)


def test_the_last_start_of_an_exec_chain_is_read_and_the_exit_block_is_not():
    text = (STATS.format(relocations=12, relative=3) + STATS.format(relocations=181,
                                                                     relative=4652) + EXIT)
    assert native_loader.parse(text) == {"relocations": 181, "relocations_from_cache": 7,
                                         "relative_relocations": 4652}
    assert native_loader.parse(EXIT) is None and native_loader.parse("") is None
    cut = STATS.format(relocations=5, relative=1).splitlines()[:5]
    assert native_loader.parse("\n".join(cut)) is None


def test_the_objects_are_the_files_mapped_executable_once_each_in_address_order():
    assert native_loader.objects(MAPS) == ["reverse-text", "libc.so.6", "plugin.so",
                                           "ld-linux-x86-64.so.2"]


def test_only_a_dynamically_linked_program_without_a_runtime_profile_gets_it(tmp_path):
    dynamic = elf(tmp_path / "dynamic", "/lib64/ld-linux-x86-64.so.2")
    static = elf(tmp_path / "static", None)
    script = tmp_path / "script"
    script.write_text("#!/bin/sh\n")
    assert native_loader.interpreter(dynamic) == "/lib64/ld-linux-x86-64.so.2"
    assert native_loader.interpreter(static) is False
    assert native_loader.interpreter(str(script)) is None

    def server(program, seen=("dynamic",)):
        made = Server(ServerResult("s"), Command([program]))
        made.row.start_usage = {"processes": [{"name": name} for name in seen]}
        return made

    native, go = server(dynamic), server(dynamic)
    assert native_loader.applies(native, None) and native_loader.applies(go, go_init)
    assert native.row.not_measured == {} == go.row.not_measured
    for program, runtime, seen, reason in (
            (dynamic, imports, ["dynamic"], native_loader.NOT_NATIVE),
            (str(script), None, ["script"], native_loader.NOT_NATIVE),
            (static, go_init, ["static"], "a static executable: no dynamic loader runs before it"),
            (dynamic, None, ["dynamic", "server"], "read when the program is the tree's one "
             "process (its cold starts saw dynamic, server)"),
            (dynamic, None, [], "read when the program is the tree's one process (its cold "
             "starts saw none)")):
        other = server(program, seen)
        assert not native_loader.applies(other, runtime)
        assert other.row.not_measured == {"loader": reason}
    long_name = elf(tmp_path / "a-server-named-at-length", "/lib/ld.so")
    assert native_loader.applies(server(long_name, ["a-server-named-"]), None)  # comm: 15
    relative = server("dynamic")  # no slash: looked up in the server's PATH
    relative.command = Command(["dynamic"], env={"PATH": str(tmp_path)})
    assert native_loader.applies(relative, None)


def test_the_block_takes_medians_of_the_starts_and_the_objects_of_the_last(monkeypatch):
    readings = iter([(10, 4), (30, 6), (20, 5)])

    class Leader:
        leader = os.getpid()

    def profiled_start(command, settings, env, at_answer, before_spawn):
        relocations, relative = next(readings)
        with open(f"{env['LD_DEBUG_OUTPUT']}.{os.getpid()}", "w") as file:
            file.write(STATS.format(relocations=relocations, relative=relative))
        return 1.0, "", at_answer(Leader)

    monkeypatch.setattr(native_loader, "profiled_start", profiled_start)
    server = Server(ServerResult("s"), Command(["./s"]))
    list(native_loader.measure(server, Settings(profiled_starts=3)))
    block = server.row.loader
    assert {k: v for k, v in block.items() if k != "objects"} == {
        "runs": 3, "relocations": 20, "relocations_from_cache": 7, "relative_relocations": 5}
    with open(f"/proc/{os.getpid()}/maps") as file:
        assert block["objects"] == native_loader.objects(file.read())


def test_a_start_without_statistics_leaves_the_block_out_with_the_cause(monkeypatch):
    class Leader:
        leader = os.getpid()

    monkeypatch.setattr(native_loader, "profiled_start",
                        lambda command, settings, env, at_answer, before_spawn:
                        (1.0, "", at_answer(Leader)))
    server = Server(ServerResult("s"), Command(["./s"]))
    assert len(list(native_loader.measure(server, Settings(profiled_starts=3)))) == 0
    assert server.row.loader is None
    assert server.row.not_measured["loader"].startswith(
        "loader statistics: no glibc loader statistics before the answer")


def test_the_profiles_of_a_native_server_and_the_why_view(tmp_path, monkeypatch):
    dynamic = elf(tmp_path / "dynamic", "/lib64/ld-linux-x86-64.so.2")
    server = Server(ServerResult("s"), Command([dynamic]))
    server.row.start_usage = {"processes": [{"name": "dynamic"}]}  # one process: the program
    monkeypatch.setattr(native_loader, "measure", lambda s, settings: iter(["loader"]))
    assert [list(p) for p in attribution.profiles(server, Settings())] == [["loader"]]
    row = {"name": "s", "status": "ok", "handshake_ms": None, "not_measured": {},
           "loader": {"runs": 3, "objects": ["s", "libc.so.6", "ld-linux-x86-64.so.2"],
                      "relocations": 181, "relocations_from_cache": 7,
                      "relative_relocations": 4652}}
    text = why({"servers": [row]})
    assert ("  dynamic loader (glibc's statistics, 3 extra starts): 3 objects mapped (s, "
            "libc.so.6, ld-linux-x86-64.so.2); 181 symbol lookups and 7 answered by the "
            "lookup cache, 4,652 relative relocations\n") in text
    row.pop("loader")
    row["memory"] = {"idle_split": {"heap": {"size_bytes": 8192, "rss_bytes": 4096,
                                             "pss_bytes": 4096}}}
    row["not_measured"] = {"loader": "a static executable: no dynamic loader runs before it"}
    assert "  dynamic loader: not measured: a static executable" in why({"servers": [row]})
