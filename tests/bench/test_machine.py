"""A benchmark names its machine: the CPU's model name from /proc/cpuinfo (platform.processor()
is empty on Linux) and the vector instruction sets that change the numbers."""

from __future__ import annotations

from pathlib import Path

from core.bench import machine

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9R14
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 sha_ni

processor\t: 1
model name\t: AMD EPYC 9R14
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 sha_ni
"""


def test_the_cpu_is_named_with_its_vector_instruction_sets(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(CPUINFO)
    assert machine.cpu_model(info) == "AMD EPYC 9R14"
    assert machine.vector_flags(info) == ["avx2", "avx512_bf16", "avx512f"]


def test_without_cpuinfo_the_name_falls_back_and_no_flags_are_claimed(tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    assert machine.cpu_model(missing)  # platform's name for it, never empty
    assert machine.vector_flags(missing) == []
    assert machine.cores() >= 1
