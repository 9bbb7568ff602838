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
    """A command line with the values of ``--env KEY=VALUE``, ``--input ID=VALUE`` and
    ``--header 'Name: value'`` (and their ``--env=KEY=VALUE`` forms) replaced by ``***``,
    keys and header names kept."""
    out, redact_next = [], None
    for arg in argv:
        if redact_next:
            arg, redact_next = _masked(arg, redact_next), None
        elif arg in ("--env", "--input", "--header"):
            redact_next = ":" if arg == "--header" else "="
        elif arg.startswith(("--env=", "--input=", "--header=")):
            option, _, value = arg.partition("=")
            arg = f"{option}={_masked(value, ':' if option == '--header' else '=')}"
        out.append(arg)
    return out


def _masked(value: str, separator: str) -> str:
    """``KEY=VALUE`` (``Name: value``) with the value masked."""
    key = value.split(separator, 1)[0]
    return f"{key}{separator}{' ' if separator == ':' else ''}{MASK}"
