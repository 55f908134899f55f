"""Tests of the data cache: location, registry checksums, offline errors, verified downloads."""

from __future__ import annotations

import dataclasses
import hashlib
import urllib.error
from pathlib import Path

import pytest
from conftest import SHARED_DATA, requires_data

from pcfair.datasets import (
    ChecksumError,
    DatasetNotFoundError,
    _cache,
    fetch_file,
    fetch_german,
    file_sha256,
    get_data_home,
    load_binarized,
)
from pcfair.datasets._registry import REGISTRY
from pcfair.errors import DataError, PCFairError


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Let only file:// URLs through, so no test can reach the network."""
    real_open = _cache._open_url

    def guarded(url, timeout):
        if not url.startswith("file://"):
            raise urllib.error.URLError(f"network disabled in tests ({url})")
        return real_open(url, timeout)

    monkeypatch.setattr(_cache, "_open_url", guarded)


def _register(monkeypatch, path: str, **changes) -> None:
    monkeypatch.setitem(REGISTRY, path, dataclasses.replace(REGISTRY[path], **changes))


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.endswith(".part"))


# --- where the cache is ---------------------------------------------------------------------


def test_data_home_argument_wins_over_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PCFAIR_DATA", str(tmp_path / "env"))
    assert get_data_home(tmp_path / "arg") == tmp_path / "arg"


def test_data_home_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PCFAIR_DATA", str(tmp_path / "env"))
    assert get_data_home() == tmp_path / "env"


def test_data_home_default_is_under_home(monkeypatch, tmp_path):
    monkeypatch.delenv("PCFAIR_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert get_data_home() == tmp_path / ".pcfair_data"
    monkeypatch.setenv("PCFAIR_DATA", "")  # empty means unset
    assert get_data_home() == tmp_path / ".pcfair_data"


def test_data_home_expands_user(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert get_data_home("~/cache") == tmp_path / "cache"


# --- registry --------------------------------------------------------------------------------


def test_registry_lists_every_upstream_file_with_url():
    expected = {
        "compas_binerized.csv",
        "compas_binary.net.txt",
        "adult_binerized.csv",
        "adult_binary.net.txt",
        "german_binerized.csv",
        "german_binary.net.txt",
        "ACS_Income_binerized.csv",
        "raw/compas-scores-two-years.csv",
        "raw/adult.data",
        "raw/adult.test",
        "raw/adult.names",
        "raw/german.data",
    }
    assert set(REGISTRY) == expected
    for entry in REGISTRY.values():
        assert len(entry.sha256) == 64 and int(entry.sha256, 16) >= 0
        assert entry.url is not None and entry.url.startswith("https://")
        assert entry.url.endswith(entry.name)


@requires_data()
@pytest.mark.parametrize("path", sorted(REGISTRY))
def test_registry_digest_matches_shared_file(path):
    assert file_sha256(SHARED_DATA / path) == REGISTRY[path].sha256


def test_file_sha256_known_digest(tmp_path):
    target = tmp_path / "x.bin"
    target.write_bytes(b"pcfair" * 50_000)  # spans several read chunks
    assert file_sha256(target) == hashlib.sha256(b"pcfair" * 50_000).hexdigest()


# --- reading from the cache --------------------------------------------------------------------


@requires_data()
def test_environment_variable_selects_cache(monkeypatch):
    monkeypatch.setenv("PCFAIR_DATA", str(SHARED_DATA))
    assert fetch_file("raw/adult.data") == SHARED_DATA / "raw" / "adult.data"
    assert fetch_file("adult.data") == SHARED_DATA / "raw" / "adult.data"  # unique file name


@requires_data()
def test_data_home_override_beats_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PCFAIR_DATA", str(tmp_path / "empty"))
    path = fetch_file("german_binerized.csv", data_home=SHARED_DATA)
    assert path == SHARED_DATA / "german_binerized.csv"
    ds = load_binarized("german", data_home=SHARED_DATA)
    assert ds.n_samples == 1000


def test_unknown_file_name_lists_known_files():
    with pytest.raises(DataError, match="unknown data file 'nope.csv'.*raw/adult.data"):
        fetch_file("nope.csv")


def test_missing_file_offline_names_file_and_directory(tmp_path):
    with pytest.raises(DatasetNotFoundError) as info:
        fetch_file("raw/german.data", data_home=tmp_path, download_if_missing=False)
    message = str(info.value)
    assert "'german.data'" in message
    assert str(tmp_path / "raw") in message
    assert REGISTRY["raw/german.data"].url in message
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, PCFairError)
    assert not (tmp_path / "raw").exists()  # nothing created


def test_failed_download_names_file_directory_and_url(tmp_path):
    # The guard fixture makes the real https URL fail as a machine without network would.
    with pytest.raises(DatasetNotFoundError) as info:
        fetch_german(data_home=tmp_path)
    message = str(info.value)
    assert "'german.data'" in message and str(tmp_path / "raw") in message
    assert "could not be downloaded" in message
    assert "download it by hand from https://archive.ics.uci.edu" in message
    assert not (tmp_path / "raw" / "german.data").exists()
    assert _leftovers(tmp_path) == []


def test_file_without_url_says_place_by_hand(monkeypatch, tmp_path):
    _register(monkeypatch, "ACS_Income_binerized.csv", url=None)
    with pytest.raises(DatasetNotFoundError, match="place the file by hand at .*ACS_Income"):
        load_binarized("acs_income", data_home=tmp_path)


def test_corrupt_cached_file_is_reported_not_replaced(tmp_path):
    bad = tmp_path / "raw" / "german.data"
    bad.parent.mkdir()
    bad.write_text("A11 6\n")
    with pytest.raises(ChecksumError, match="german.data.*expected") as info:
        fetch_file("raw/german.data", data_home=tmp_path)
    assert f"Delete {bad}" in str(info.value)
    assert bad.read_text() == "A11 6\n"


# --- downloading ------------------------------------------------------------------------------


@pytest.fixture()
def source_file(tmp_path):
    src = tmp_path / "upstream" / "german.data"
    src.parent.mkdir()
    content = b"A11 6 A34 A43 1169 A65 A75 4 A93 A101 4 A121 67 A143 A152 2 A173 1 A192 A201 1\n"
    src.write_bytes(content)
    return src, hashlib.sha256(content).hexdigest()


def test_download_from_file_url_verifies_and_moves_into_place(monkeypatch, tmp_path, source_file):
    src, digest = source_file
    _register(monkeypatch, "raw/german.data", url=src.as_uri(), sha256=digest)
    cache = tmp_path / "cache"
    path = fetch_file("raw/german.data", data_home=cache)
    assert path == cache / "raw" / "german.data"
    assert path.read_bytes() == src.read_bytes()
    assert _leftovers(cache) == []
    # A second call reads the cached copy: remove the source to prove no download happens.
    src.unlink()
    assert fetch_file("raw/german.data", data_home=cache, download_if_missing=False) == path
    frame = fetch_german(data_home=cache).frame
    assert frame.shape == (1, 22) and frame.loc[0, "credit"] == "good"


def test_download_checksum_mismatch_leaves_nothing(monkeypatch, tmp_path, source_file):
    src, _ = source_file
    _register(monkeypatch, "raw/german.data", url=src.as_uri(), sha256="0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(ChecksumError, match=r"german.data.*sha256 [0-9a-f]{64}, expected 0{64}"):
        fetch_file("raw/german.data", data_home=cache)
    assert not (cache / "raw" / "german.data").exists()
    assert _leftovers(cache) == []


def test_download_uses_the_substituted_opener(monkeypatch, tmp_path):
    payload = b"ScoreText 1\n"
    opened = []

    class FakeResponse:
        def __init__(self):
            self._chunks = [payload[:5], payload[5:], b""]

        def read(self, _size):
            return self._chunks.pop(0)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def fake_open(url, timeout):
        opened.append((url, timeout))
        return FakeResponse()

    monkeypatch.setattr(_cache, "_open_url", fake_open)
    _register(monkeypatch, "compas_binary.net.txt", sha256=hashlib.sha256(payload).hexdigest())
    path = fetch_file("compas_binary.net.txt", data_home=tmp_path)
    assert path.read_bytes() == payload
    assert opened == [(REGISTRY["compas_binary.net.txt"].url, _cache.DOWNLOAD_TIMEOUT)]


def test_download_interrupted_midway_leaves_nothing(monkeypatch, tmp_path):
    class Broken:
        def read(self, _size):
            raise OSError("connection reset")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(_cache, "_open_url", lambda url, timeout: Broken())
    with pytest.raises(DatasetNotFoundError, match="connection reset"):
        fetch_file("raw/adult.names", data_home=tmp_path)
    assert not (tmp_path / "raw" / "adult.names").exists()
    assert _leftovers(tmp_path) == []


@requires_data()
def test_end_to_end_download_of_shared_file_into_fresh_cache(monkeypatch, tmp_path):
    _register(monkeypatch, "raw/german.data", url=(SHARED_DATA / "raw" / "german.data").as_uri())
    ds = fetch_german(data_home=tmp_path)
    assert ds.n_samples == 1000
    assert file_sha256(tmp_path / "raw" / "german.data") == REGISTRY["raw/german.data"].sha256


def test_download_all_fills_the_cache_from_the_registry(monkeypatch, tmp_path, capsys):
    """``python -m pcfair.datasets --download-all`` fetches every registered file (here from
    local copies standing in for the public URLs) and says how many it has."""
    from pcfair.datasets.__main__ import main

    calls = []

    def fake_fetch(path, data_home=None):
        calls.append(path)
        if path == "raw/german.data":
            raise DatasetNotFoundError("offline")
        return tmp_path / path

    monkeypatch.setattr("pcfair.datasets.__main__.fetch_file", fake_fetch)
    assert main(["--download-all", "--data-home", str(tmp_path)]) == 2
    assert calls == sorted(calls, key=list(REGISTRY).index) and set(calls) == set(REGISTRY)
    err = capsys.readouterr().err
    assert f"{len(REGISTRY) - 1} of {len(REGISTRY)} file(s)" in err and "offline" in err
    with pytest.raises(SystemExit):
        main([])
