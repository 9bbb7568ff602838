"""mcpstart: a profiler for MCP servers that speak the stdio transport."""

__version__ = "0.1.0"
