"""The Java reference server (servers/java, build-recipes/java.toml) and the footprint's maven
method: built with its recipe into mcpstart's build cache ($MCPSTART_CACHE_DIR, else the user
cache; Maven downloads into the build folder), so a run reuses an unchanged build, then driven over real pipes and counted. Without java, javac or mvn the tests skip; with
MCPSTART_REQUIRE_ALL=1 (CI) they fail instead."""

import dataclasses
import json
import subprocess
import threading
import zipfile
from pathlib import Path

import pytest

from mcpstart.measure.footprint import measure_footprint, tree_bytes
from mcpstart.targets.build import cache_root, ensure_built
from mcpstart.targets.recipes import load_recipe

from conftest import require_programs, write_recipe

ROOT = Path(__file__).parent.parent
RECIPE = ROOT / "build-recipes" / "java.toml"
MIB = 1024 * 1024
# `mvn dependency:tree -Dscope=runtime` of servers/java at mcp.version 2.1.0, read by hand
RUNTIME_2_1_0 = {
    ("io.modelcontextprotocol.sdk:mcp", "2.1.0"),
    ("io.modelcontextprotocol.sdk:mcp-json-jackson3", "2.1.0"),
    ("tools.jackson.core:jackson-databind", "3.1.4"),
    ("tools.jackson.core:jackson-core", "3.1.4"),
    ("com.networknt:json-schema-validator", "3.0.6"),
    ("com.ethlo.time:itu", "1.14.0"),
    ("tools.jackson.dataformat:jackson-dataformat-yaml", "3.1.4"),
    ("org.snakeyaml:snakeyaml-engine", "3.0.1"),
    ("io.modelcontextprotocol.sdk:mcp-core", "2.1.0"),
    ("org.slf4j:slf4j-api", "2.0.16"),
    ("com.fasterxml.jackson.core:jackson-annotations", "2.21"),
    ("io.projectreactor:reactor-core", "3.7.0"),
    ("org.reactivestreams:reactive-streams", "1.0.4"),
}

pytestmark = [pytest.mark.e2e, pytest.mark.untimed]  # builds the Java reference server


@pytest.fixture(scope="module")
def built():
    require_programs("java", "javac", "mvn")
    build = ensure_built(load_recipe(RECIPE), cache_root())
    assert build.status in ("built", "cached"), f"{build.reason}\n{build.log_tail}"
    return build


class Server:
    """The built server spawned with pipes; a watchdog kills it after 60 s."""

    def __init__(self, build):
        command = build.command()
        self.process = subprocess.Popen(command.argv, cwd=command.cwd, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.watchdog = threading.Timer(60, self.process.kill)
        self.watchdog.start()

    def ask(self, id_, method: str, params: dict) -> dict:
        line = json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        assert answer["id"] == id_ and "error" not in answer, answer
        return answer["result"]

    def close(self) -> tuple[int, bytes, bytes]:
        """Close stdin; the exit status, what stdout still held, and stderr."""
        self.process.stdin.close()
        rest, err = self.process.stdout.read(), self.process.stderr.read()
        code = self.process.wait()
        self.watchdog.cancel()
        return code, rest, err


def test_server_speaks_stdio_reverses_by_code_points_and_exits_at_eof(built):
    server = Server(built)
    init = server.ask(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                        "clientInfo": {"name": "t", "version": "0"}})
    assert init["protocolVersion"] == "2025-11-25"
    assert init["serverInfo"] == {"name": "reverse-text", "version": "1.0.0"}
    assert init["capabilities"]["tools"] == {}
    server.process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    [tool] = server.ask(2, "tools/list", {})["tools"]
    assert tool == {"name": "reverse_text", "description": "Reverse text by Unicode code points.",
                    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                                    "required": ["text"]}}
    texts = ["abc", "", "e\u0301x", "a\U0001F600b", "\U0001F469\u200d\U0001F469\u200d\U0001F467",
             "\U0001F1EB\U0001F1F7!", "日本語"]
    for id_, text in enumerate(texts, 3):
        result = server.ask(id_, "tools/call", {"name": "reverse_text", "arguments": {"text": text}})
        assert result == {"content": [{"type": "text", "text": text[::-1]}], "isError": False}
    code, rest, err = server.close()
    assert code == 0 and rest == b""  # nothing but answers on stdout, and an exit at EOF
    # slf4j-api without a provider warns on stderr (slf4j.org/codes.html#noProviders)
    assert all(line.startswith("SLF4J(W): ") for line in err.decode().splitlines()), err


def test_maven_method_counts_what_the_jar_loads(built):
    block, sdk_version, warnings = measure_footprint(built, False)
    assert warnings == [] and sdk_version == "2.1.0"
    assert block["dependency_count"] == len(RUNTIME_2_1_0) == 13
    target = built.folder / "src" / "target"
    jars = sorted(p.name for p in (target / "lib").iterdir())
    with zipfile.ZipFile(target / "reverse-text.jar") as jar:
        manifest = jar.read("META-INF/MANIFEST.MF").decode().replace("\r\n ", "").replace("\n ", "")
    class_path = next(l for l in manifest.splitlines() if l.startswith("Class-Path: "))
    assert sorted(e.removeprefix("lib/") for e in class_path.split()[1:]) == jars
    assert jars == sorted(f"{name.split(':')[1]}-{version}.jar" for name, version in RUNTIME_2_1_0)
    assert block["artifact_bytes"] == (target / "reverse-text.jar").stat().st_size + sum(
        p.stat().st_size for p in (target / "lib").iterdir())
    assert block["lock_count"] is None and block["debug_info"] is None
    assert block["not_measured"] == {
        "lock_count": "the recipe names no lock file",
        "debug_info": "no ELF file in the artifact (an interpreted server)",
        "sections": "no ELF file in the artifact (an interpreted server)"}
    # the dev tree holds what Maven downloaded: the jars, their poms, Maven's plugins
    assert block["dev_tree_bytes"] > tree_bytes([str(built.folder / "m2")]) > 10 * MIB


def test_sdk_version_is_what_maven_resolved_not_what_the_recipe_says(built):
    recipe = dataclasses.replace(built.recipe, sdk_version="2.0.1")
    _, sdk_version, warnings = measure_footprint(dataclasses.replace(built, recipe=recipe), False)
    assert sdk_version == "2.1.0"
    assert warnings == [{"kind": "sdk_version", "metric": "sdk_version", "detail":
                         "recipe says io.modelcontextprotocol.sdk:mcp 2.0.1, build has 2.1.0"}]


POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>t</groupId><artifactId>scopes</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId>
      <version>2.0.16</version></dependency>
    <dependency><groupId>io.projectreactor</groupId><artifactId>reactor-core</artifactId>
      <version>3.7.0</version><scope>runtime</scope></dependency>
    <dependency><groupId>com.fasterxml.jackson.core</groupId>
      <artifactId>jackson-annotations</artifactId><version>2.21</version><scope>test</scope>
    </dependency>
    <dependency><groupId>org.snakeyaml</groupId><artifactId>snakeyaml-engine</artifactId>
      <version>3.0.1</version><scope>provided</scope></dependency>
  </dependencies>
  <build><plugins><plugin><groupId>org.apache.maven.plugins</groupId>
    <artifactId>maven-dependency-plugin</artifactId><version>3.8.1</version></plugin></plugins></build>
</project>
"""


def _scopes_project(tmp_path: Path):
    """A pom with one dependency of each scope, all of them in the Java build's repository,
    and its Build (no [build]: the count reads MAVEN_OPTS from mcpstart's environment)."""
    path = write_recipe(tmp_path, "scopes", {
        "source": "servers/scopes", "run": {"argv": ["java", "-version"]},
        "dependencies": {"method": "maven", "target": "."}}, {"pom.xml": POM})
    return ensure_built(load_recipe(path), tmp_path / "cache")


def test_maven_method_counts_compile_and_runtime_scope_with_transitives(built, tmp_path,
                                                                        monkeypatch):
    monkeypatch.setenv("MAVEN_OPTS", f"-Dmaven.repo.local={built.folder / 'm2'}")
    block, _, warnings = measure_footprint(_scopes_project(tmp_path), False)
    assert warnings == []
    # slf4j-api (compile), reactor-core (runtime) and its reactive-streams; not the test or
    # provided dependency, nor the project itself
    assert block["dependency_count"] == 3


def test_maven_method_fails_with_mavens_own_words(built, tmp_path, monkeypatch):
    monkeypatch.setenv("MAVEN_OPTS", f"-Dmaven.repo.local={tmp_path / 'empty-m2'}")
    block, _, warnings = measure_footprint(_scopes_project(tmp_path), False)
    assert block["dependency_count"] is None and "dependency_count" not in block["not_measured"]
    [warning] = warnings
    assert warning["metric"] == "footprint.dependency_count"
    assert warning["detail"].startswith("dependency_count not counted: mvn -o -B -q "
                                        "dependency:list -DincludeScope=runtime exited with "
                                        "code 1: No plugin found for prefix 'dependency'")
