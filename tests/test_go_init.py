"""Go start-up attribution (measure/go_init.py) on traces and build information written here:
the inittrace lines' parse (the last process's, when a launcher's Go runtime traced first),
packages to modules by Go's standard-library rule and the build's module list, and the block
in the imports shape."""

from mcpstart.measure import go_init, imports

TRACE = """\
init internal/bytealg @0 ms, 0 ms clock, 0 bytes, 0 allocs
init runtime @0.040 ms, 0.5 ms clock, 0 bytes, 0 allocs
init internal/bytealg @0 ms, 0 ms clock, 0 bytes, 0 allocs
init runtime @0.030 ms, 0.25 ms clock, 0 bytes, 0 allocs
some log line of the server
init net/http @0.9 ms, 1.5 ms clock, 2048 bytes, 30 allocs
init github.com/acme/sdk/jsonschema @2.5 ms, 2 ms clock, 81256 bytes, 296 allocs
init github.com/acme/sdk/mcp @4.6 ms, 0.5 ms clock, 64 bytes, 2 allocs
init example.com/server @5.2 ms, 0.25 ms clock, 16 bytes, 1 allocs
init golang.org/x/sys/cpu @5.5 ms, 0.125 ms clock, 0 bytes, 0 allocs
"""
INFO = {"main": "example.com/server", "modules": ["github.com/acme/sdk", "golang.org/x/sys"]}


def section(version: str, mod: str) -> bytes:
    """A .go.buildinfo section with inline strings (flags bit 2), as Go 1.18+ writes it."""
    def varint(n: int) -> bytes:
        out = b""
        while True:
            out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
            n >>= 7
            if not n:
                return out
    header = go_init.MAGIC + bytes([8, 2])
    framed = "0" * 16 + mod + "1" * 16
    return (header.ljust(32, b"\0") + varint(len(version)) + version.encode()
            + varint(len(framed.encode())) + framed.encode())


def test_the_last_process_trace_is_kept():
    packages = go_init.parse(TRACE)
    assert [p["name"] for p in packages][:3] == ["internal/bytealg", "runtime", "net/http"]
    assert packages[1]["clock_ms"] == 0.25 and len(packages) == 7
    assert packages[3] == {"name": "github.com/acme/sdk/jsonschema", "start_ms": 2.5,
                           "clock_ms": 2.0, "bytes": 81256, "allocs": 296}


def test_packages_sum_per_module():
    found = go_init.attribute(go_init.parse(TRACE), INFO)
    dists = found["distributions"]
    assert found["import_ms"] == 4.625 and found["interpreter_ms"] is None
    assert dists[imports.STDLIB] == {"self_ms": 1.75, "cumulative_ms": 1.75, "modules": 3}
    assert dists["github.com/acme/sdk"] == {"self_ms": 2.5, "cumulative_ms": 2.5, "modules": 2}
    assert dists["example.com/server"]["self_ms"] == 0.25
    assert dists["golang.org/x/sys"]["modules"] == 1


def test_a_package_outside_every_module_is_its_own():
    assert go_init.module_of("github.com/other/thing/sub", INFO) == "github.com/other/thing/sub"
    assert go_init.module_of("vendor/golang.org/x/net/idna", INFO) == imports.STDLIB
    assert go_init.module_of("github.com/acme/sdkextra", INFO) == "github.com/acme/sdkextra"


def test_the_block_marks_the_main_module_as_the_server_code():
    one = go_init.attribute(go_init.parse(TRACE), INFO)
    block = imports.block([(10.0, one), (12.0, one), (14.0, one)],
                          {"classifiers": {}, "main": INFO["main"]}, 8.0, "stdio", runtime="go")
    by_name = {d["name"]: d for d in block["distributions"]}
    assert block["runtime"] == "go" and block["other_transport"] is None
    assert block["instrumented_ms"] == 12.0 and block["interpreter_ms"] is None
    assert not by_name["example.com/server"]["installed"]
    assert not by_name[imports.STDLIB]["installed"] and by_name["github.com/acme/sdk"]["installed"]
    assert [d["name"] for d in block["distributions"]][:2] == ["github.com/acme/sdk", imports.STDLIB]


def test_build_info_reads_the_inline_module_lines():
    mod = ("path\texample.com/server\nmod\texample.com/server\t(devel)\t\n"
           "dep\tgithub.com/acme/sdk\tv1.2.0\th1:abc=\n"
           "dep\tgolang.org/x/sys\tv0.30.0\th1:def=\nbuild\tGOOS=linux\n")
    assert go_init.parse_build_info(section("go1.24.0", mod)) == {
        "main": "example.com/server", "modules": ["github.com/acme/sdk", "golang.org/x/sys"]}
    assert go_init.parse_build_info(b"\x7fELF not a build info section") is None
    old = bytearray(section("go1.24.0", mod))
    old[15] = 0  # pointers to the strings, not the strings: before Go 1.18
    assert go_init.parse_build_info(bytes(old)) is None


def test_the_trace_is_added_to_the_servers_own_godebug():
    from mcpstart.command import Command
    assert go_init.traced_env(Command(["s"], env={"GODEBUG": "http2client=0"})) == {
        "GODEBUG": "http2client=0,inittrace=1,gctrace=1"}
    assert go_init.traced_env(Command(["s"], base_env={})) == {
        "GODEBUG": "inittrace=1,gctrace=1"}
