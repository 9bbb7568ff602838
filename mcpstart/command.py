"""What is spawned for a server: the one command value type that targets make and transports
spawn."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Command:
    """Exactly what is spawned: ``argv`` (no shell), ``cwd`` (None: mcpstart's), ``env``, the
    variables set on top of the base environment, and ``base_env``: None to inherit mcpstart's
    environment (as most editors do), else exactly that mapping (a client that passes a reduced
    environment)."""

    argv: list[str]
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    base_env: dict[str, str] | None = None

    def environment(self) -> dict[str, str]:
        """The complete environment the server gets."""
        return {**(os.environ if self.base_env is None else self.base_env), **self.env}

    def record(self) -> dict:
        """The results-file form: ``{argv, cwd, env_keys}``; env values are never stored."""
        return {"argv": list(self.argv), "cwd": self.cwd, "env_keys": sorted(self.env)}

    def program(self) -> str | None:
        """The file ``argv[0]`` runs: looked up in the server's PATH when it has no slash,
        else taken from ``cwd``; None when the lookup finds nothing."""
        argv0 = self.argv[0]
        if "/" not in argv0:
            return shutil.which(argv0, path=self.environment().get("PATH"))
        return os.path.join(self.cwd or os.getcwd(), argv0)


def env_pairs(values) -> dict[str, str]:
    """``KEY=VALUE`` words (``--env``) as a mapping; a later key wins.

    Raises:
        ValueError: a word without ``=`` or with an empty KEY.
    """
    pairs = {}
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise ValueError(f"{value!r} is not KEY=VALUE")
        pairs[key] = val
    return pairs
