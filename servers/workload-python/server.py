"""The four tools of the Streamable HTTP MCP benchmark (docs/workload-servers.md) on the
MCPServer API: over stdio, or with --port PORT over Streamable HTTP at
http://127.0.0.1:PORT/mcp. Typed inputs (annotated parameters) and typed outputs (pydantic
models: structured content with its schema, and the same JSON as a text block). The GET uses
httpx2, the HTTP client the SDK itself depends on (pinned in requirements.txt)."""

import argparse
import asyncio
import time
from typing import Annotated, Any

import httpx2
from mcp.server import MCPServer
from pydantic import BaseModel, Field

mcp = MCPServer("workload", version="1.0.0")
http = httpx2.AsyncClient()


class FibonacciOutput(BaseModel):
    input: int
    result: int


class FetchOutput(BaseModel):
    url: str
    status_code: int
    response_time_ms: float
    body: str


class ProcessOutput(BaseModel):
    original_keys: list[str]
    transformed_data: dict[str, Any]


class QueryOutput(BaseModel):
    query: str
    delay_ms: int


def fibonacci(n: int) -> int:
    return n if n <= 1 else fibonacci(n - 1) + fibonacci(n - 2)


def upper_case(value: Any) -> Any:
    if isinstance(value, str):
        return value.upper()
    if isinstance(value, list):
        return [upper_case(item) for item in value]
    if isinstance(value, dict):
        return {key: upper_case(item) for key, item in value.items()}
    return value


@mcp.tool()
def calculate_fibonacci(
    n: Annotated[int, Field(ge=0, le=40, description="position in the Fibonacci sequence")],
) -> FibonacciOutput:
    """Compute the n-th Fibonacci number recursively (CPU-bound)."""
    return FibonacciOutput(input=n, result=fibonacci(n))


@mcp.tool()
async def fetch_external_data(endpoint: Annotated[str, Field(description="the URL to GET")]) -> FetchOutput:
    """GET a URL and return its status and body (I/O-bound)."""
    start = time.perf_counter()
    response = await http.get(endpoint)
    return FetchOutput(url=endpoint, status_code=response.status_code,
                       response_time_ms=(time.perf_counter() - start) * 1e3, body=response.text)


@mcp.tool()
def process_json_data(
    data: Annotated[dict[str, Any], Field(description="a JSON object; its string values are upper-cased")],
) -> ProcessOutput:
    """Upper-case every string value of a JSON object."""
    return ProcessOutput(original_keys=list(data), transformed_data=upper_case(data))


@mcp.tool()
async def simulate_database_query(
    query: Annotated[str, Field(description="the query text (not run)")],
    delay_ms: Annotated[int, Field(ge=0, le=5000, description="how long the simulated query takes")],
) -> QueryOutput:
    """Simulate a database query: wait delay_ms without blocking (I/O-bound)."""
    await asyncio.sleep(delay_ms / 1e3)
    return QueryOutput(query=query, delay_ms=delay_ms)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="the benchmark's four tools over stdio, or "
                                                 "Streamable HTTP at /mcp with --port")
    parser.add_argument("--port", type=int)
    port = parser.parse_args().port
    if port is None:
        mcp.run()
    else:
        mcp.run(transport="streamable-http", host="127.0.0.1", port=port)
