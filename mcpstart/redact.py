"""Secrets never leave: values of ``--env``, of a config's ``env`` and everything substituted
from the environment are replaced by ``***`` wherever mcpstart writes text (the table,
progress, the results files), inside argv, reasons, warnings and stderr tails alike."""

from __future__ import annotations

MASK = "***"
MIN_SECRET_CHARS = 4
"""Shorter values are not masked: "1", "on" or "dev" cannot be told from ordinary text, and
masking them would garble every figure and sentence that happens to contain them."""


def secrets_of(values) -> tuple[str, ...]:
    """The values worth masking, longest first (so a secret containing another is masked
    whole)."""
    return tuple(sorted({v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_CHARS},
                        key=len, reverse=True))


def redact(value, secrets: tuple[str, ...]):
    """``value`` (str, or dicts and lists of them, any depth) with every secret replaced by
    ``***``; keys, numbers and other values are kept."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, MASK)
        return value
    if isinstance(value, dict):
        return {k: redact(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, secrets) for v in value]
    return value


def redact_argv(argv: list[str]) -> list[str]:
    """A command line with the values of ``--env KEY=VALUE`` and ``--input ID=VALUE`` (and
    their ``--env=KEY=VALUE`` forms) replaced by ``***``, keys kept."""
    out, redact_next = [], False
    for arg in argv:
        if redact_next:
            arg, redact_next = arg.split("=", 1)[0] + "=" + MASK, False
        elif arg in ("--env", "--input"):
            redact_next = True
        elif arg.startswith(("--env=", "--input=")):
            arg = arg.split("=", 2)[0] + "=" + arg.split("=", 2)[1] + "=" + MASK
        out.append(arg)
    return out
