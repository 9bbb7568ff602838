"""Default measurement settings, shared by the CLI and the library. Kept free of heavy imports
so that ``mcpstart --help`` starts fast."""

RUNS = 6
WARMUP = 1
TIMEOUT_S = 60.0
PAYLOAD_BYTES = 5 * 1024 * 1024
REVISION = "2025-11-25"
"""The newest protocol revision of the initialize-handshake era (MCP specification 2025-11-25)."""
OUTPUT = "mcpstart-results.json"
"""The results file written when --output is not given (its TOML copy sits beside it)."""
