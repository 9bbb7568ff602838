"""Write the search workload's corpus and its index (docs/workload-servers.md, "The search
workload") into the folder given as the only argument: the same bytes on every machine, from
a fixed seed, with no download.

    docs/doc-NNNN.md     DOCS markdown pages ("# Title" and paragraphs), ~3 MB in all
    reference/manual.txt one large file of LARGE_BYTES bytes, for read_file
    tests/run.sh         the test suite run_tests runs (POSIX sh), tests/names.txt its tests
    index.json           the BM25 index of docs/: {"docs": [{"id", "path", "title", "length"}],
                         "postings": {term: [doc, tf, doc, tf, ...]}}; doc is the position in
                         "docs", tf the term's count in it, length the page's token count

A token is a maximal run of ASCII letters and digits, lower-cased (the servers split their
queries the same way). Words are drawn from a Zipf distribution (exponent 1) over a
vocabulary of TERMS (plain words of an API's documentation) followed by generated ones, with
SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
OOPSLA 2014) as the generator, so the corpus does not depend on Python's random module.
"""

import bisect
import json
import re
import sys
from pathlib import Path

SEED = 29
DOCS = 1500
LARGE_BYTES = 1 << 20
TESTS = 400
TERMS = """server client session transport request response stream index token latency cache
memory process thread schema tool resource prompt handler error timeout retry buffer socket
message header payload encoding protocol version capability notification cancel progress
search query document corpus score rank field config option plugin module package build test
deploy runtime compiler garbage heap stack profile trace metric log event queue worker pool
lock mutex channel future promise async await callback signal pipe file path directory
permission root user token auth secret key certificate proxy gateway route endpoint handshake
""".split()
SYLLABLES = "ka ri to ne su mo la vi de po chi ru ze an or el is um ba fe go hi jo ku".split()
TOKEN = re.compile(r"[A-Za-z0-9]+")


class SplitMix64:
    """SplitMix64: 64-bit state, one output per step."""

    def __init__(self, seed: int):
        self.state = seed & (2**64 - 1)

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & (2**64 - 1)
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (2**64 - 1)
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (2**64 - 1)
        return z ^ (z >> 31)

    def uniform(self) -> float:
        """A float in [0, 1) from the top 53 bits."""
        return (self.next() >> 11) / 2**53

    def below(self, n: int) -> int:
        return self.next() % n


def vocabulary(rng: SplitMix64, size: int = 6000) -> list[str]:
    """TERMS, then generated words of 2 to 4 syllables until ``size`` distinct words."""
    words, seen = list(TERMS), set(TERMS)
    while len(words) < size:
        word = "".join(SYLLABLES[rng.below(len(SYLLABLES))] for _ in range(2 + rng.below(3)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def zipf_sampler(rng: SplitMix64, words: list[str]):
    """A function drawing one word, rank r with probability proportional to 1/r; the ranks
    are the vocabulary shuffled once, so TERMS spread over frequent and rare ranks."""
    ranked = words[:]
    for i in range(len(ranked) - 1, 0, -1):  # Fisher-Yates
        j = rng.below(i + 1)
        ranked[i], ranked[j] = ranked[j], ranked[i]
    cumulative, total = [], 0.0
    for rank in range(1, len(ranked) + 1):
        total += 1.0 / rank
        cumulative.append(total)
    return lambda: ranked[min(bisect.bisect_right(cumulative, rng.uniform() * total),
                              len(ranked) - 1)]


def sentence(rng: SplitMix64, word) -> str:
    words = [word() for _ in range(6 + rng.below(14))]
    return words[0].capitalize() + " " + " ".join(words[1:]) + "."


def page(rng: SplitMix64, word, number: int) -> tuple[str, str]:
    """(title, markdown text) of one page: a title and 3 to 8 paragraphs."""
    title = " ".join(word() for _ in range(2 + rng.below(4))).capitalize()
    paragraphs = [" ".join(sentence(rng, word) for _ in range(2 + rng.below(5)))
                  for _ in range(3 + rng.below(6))]
    return title, f"# {title}\n\n" + "\n\n".join(paragraphs) + "\n"


def write(root: Path) -> None:
    rng = SplitMix64(SEED)
    word = zipf_sampler(rng, vocabulary(rng))
    (root / "docs").mkdir(parents=True)
    docs, postings = [], {}
    for number in range(1, DOCS + 1):
        doc_id = f"doc-{number:04d}"
        title, text = page(rng, word, number)
        (root / "docs" / f"{doc_id}.md").write_text(text)
        tokens = [t.lower() for t in TOKEN.findall(text)]
        counts = {}
        for token in tokens:
            counts[token] = counts.get(token, 0) + 1
        for token, tf in counts.items():
            postings.setdefault(token, []).extend((len(docs), tf))
        docs.append({"id": doc_id, "path": f"docs/{doc_id}.md", "title": title,
                     "length": len(tokens)})
    (root / "index.json").write_text(json.dumps(
        {"docs": docs, "postings": dict(sorted(postings.items()))}, separators=(",", ":")))

    (root / "reference").mkdir()
    lines, size = [], 0
    while size < LARGE_BYTES:
        line = sentence(rng, word) + "\n"
        lines.append(line)
        size += len(line)
    (root / "reference" / "manual.txt").write_text("".join(lines)[:LARGE_BYTES])

    (root / "tests").mkdir()
    names = [f"test_{word()}_{word()}_{n}" for n in range(1, TESTS + 1)]
    (root / "tests" / "names.txt").write_text("\n".join(names) + "\n")
    (root / "tests" / "run.sh").write_text(
        "# Run the tests whose name holds $1 (all without it): one TAP line each, then a summary.\n"
        "exec 2>&1\n"
        "n=0\n"
        "while read -r name; do\n"
        "  case \"$name\" in *\"$1\"*) n=$((n + 1)); echo \"ok $n - $name\";; esac\n"
        "done < tests/names.txt\n"
        "echo \"1..$n\"\n"
        "echo \"# $n tests, 0 failures\"\n")


if __name__ == "__main__":
    write(Path(sys.argv[1]))
