"""The machine a benchmark ran on, as its raw results record it: the CPU's model name (which
``platform.processor()`` leaves empty on Linux, so figures said "x86_64"), its vector
instruction sets and the cores this process may use. Every figure names its machine."""

from __future__ import annotations

import os
import platform
from pathlib import Path

from core.engine.backends.generation.local_transformers import cpu_flags

CPUINFO = Path("/proc/cpuinfo")
# The instruction sets that change the numbers here (CTranslate2's int8 and torch's kernels).
VECTOR_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_int8", "amx_tile")


def cpu_model(cpuinfo: Path = CPUINFO) -> str:
    """The CPU's model name ("AMD EPYC", "Intel(R) Xeon(R) ..."), else what platform knows."""
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def vector_flags(cpuinfo: Path = CPUINFO) -> list[str]:
    """The vector instruction sets of VECTOR_FLAGS this CPU has, sorted."""
    return sorted(cpu_flags(cpuinfo) & set(VECTOR_FLAGS))


def cores() -> int:
    """The cores this process may run on (its CPU affinity: a container pinned to some CPUs
    counts those; a CPU-time quota such as docker's --cpus is not seen here)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def describe() -> str:
    """One line for a figure: "2 cores of AMD EPYC (avx2, avx512f)"."""
    flags = vector_flags()
    n = cores()
    return f"{n} core{'s' if n != 1 else ''} of {cpu_model()}" + (f" ({', '.join(flags)})" if flags else "")


def as_dict() -> dict[str, object]:
    """What a benchmark's JSON records under "machine"."""
    return {"cpu": cpu_model(), "cores": cores(), "flags": vector_flags()}
