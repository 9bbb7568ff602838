"""The machine a run happened on, stored with the results so figures can be compared later."""

from __future__ import annotations

import os
import platform
import socket


def cpu_model() -> str | None:
    """The CPU's model name from /proc/cpuinfo (Linux), else ``platform.processor()``."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def describe(toolchains: dict[str, str]) -> dict:
    """``{hostname, os, kernel, cpu_model, cpu_count, load_average, python, toolchains}``;
    ``load_average`` is the 1, 5 and 15 minute load when the run started."""
    return {
        "hostname": socket.gethostname(),
        "os": platform.system(),
        "kernel": platform.release(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
        "toolchains": dict(toolchains),
    }
