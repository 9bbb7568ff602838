"""benchmarks/memory_split_check.py's reading of the Java heap's address range in smaps:
the resident bytes of the mappings overlapping the range, those of them the split puts in
``anon``, and how far a mapping reaches past the range."""

from conftest import benchmark

EXE = "/usr/lib/jvm/bin/java"
SMAPS = """\
55d000000000-55d000001000 r-xp 00000000 fe:00 11 /usr/lib/jvm/bin/java
Rss:                   4 kB
687400000-69f000000 rw-p 00000000 00:00 0
Size:             389120 kB
Rss:               18200 kB
69f000000-7ff800000 ---p 00000000 00:00 0
Rss:                   0 kB
7ffb00000-7ffb75000 rw-p 00c77000 fe:00 315149   /usr/lib/jvm/lib/server/classes.jsa
Rss:                 468 kB
7ffc78000-800001000 rw-p 00000000 00:00 0
Rss:                  12 kB
800001000-800002000 rw-p 00000000 00:00 0
Rss:                   4 kB
"""
LOW, HIGH = 0x687400000, 0x800000000


def test_the_heap_range_counts_overlapping_mappings_by_class():
    check = benchmark("memory_split_check")
    assert check.heap_range(SMAPS, LOW, HIGH, EXE) == {
        "range_rss_bytes": (18200 + 468 + 12) * 1024,
        "range_anon_rss_bytes": (18200 + 12) * 1024,
        "range_outside_bytes": 0x1000}


def test_the_heap_line_gives_the_range():
    check = benchmark("memory_split_check")
    info = (" garbage-first heap   total 397312K, used 18896K [0x0000000687400000, "
            "0x0000000800000000)\n  region size 4096K, 4 young (16384K), 1 survivors\n")
    found = check.re.search(check.HEAP_RANGE, info)
    assert [int(v, 16) for v in found.groups()] == [LOW, HIGH]
