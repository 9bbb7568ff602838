"""mcpstart: a profiler for MCP servers that speak the stdio transport."""

from collections.abc import Callable

__version__ = "0.1.0"

Progress = Callable[[str], None]
"""A callback that receives one line of progress text (the CLI prints it to stderr)."""
