"""The local data cache: where it is, checksum verification, and downloads.

The cache directory is, in order of precedence, the ``data_home`` argument, the ``PCFAIR_DATA``
environment variable, or ``~/.pcfair_data`` (``Path.home() / ".pcfair_data"`` on every
platform, the same convention as scikit-learn's ``~/scikit_learn_data``). Files keep their
upstream names: binarized tables at the top level, raw public files under ``raw/``.

A download goes to a temporary file in the target folder, its sha256 is checked, and only then
is it moved into place, so the cache never holds a partial or corrupt file.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from pcfair.datasets._errors import ChecksumError, DatasetNotFoundError
from pcfair.datasets._registry import REGISTRY, RemoteFile
from pcfair.errors import DataError

#: Environment variable that overrides the default cache directory.
ENV_VAR = "PCFAIR_DATA"

#: Seconds to wait for a server before giving up on a download.
DOWNLOAD_TIMEOUT = 60.0

_CHUNK = 1 << 16

# (resolved path, size, mtime_ns) of files whose digest was already checked in this process.
_VERIFIED: set[tuple[str, int, int]] = set()


def get_data_home(data_home: str | os.PathLike[str] | None = None) -> Path:
    """Return the cache directory pcfair reads data files from and downloads them into.

    Parameters
    ----------
    data_home : str or path-like, optional
        Explicit directory. When ``None``, the ``PCFAIR_DATA`` environment variable is used if
        it is set and non-empty, else ``~/.pcfair_data``.

    Returns
    -------
    pathlib.Path
        The directory, with ``~`` expanded. It is not created here; a download creates it.

    Examples
    --------
    >>> from pcfair.datasets import get_data_home
    >>> str(get_data_home("/tmp/pcfair-cache"))
    '/tmp/pcfair-cache'
    """
    if data_home is None:
        env = os.environ.get(ENV_VAR, "")
        data_home = env if env else Path.home() / ".pcfair_data"
    return Path(data_home).expanduser()


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Return the lowercase hex sha256 digest of a file's bytes.

    Parameters
    ----------
    path : str or path-like
        The file to hash.

    Returns
    -------
    str
        64 hexadecimal characters.

    Examples
    --------
    >>> import tempfile, os
    >>> from pcfair.datasets import file_sha256
    >>> with tempfile.NamedTemporaryFile(delete=False) as f:
    ...     _ = f.write(b"abc")
    >>> file_sha256(f.name)[:16]
    'ba7816bf8f01cfea'
    >>> os.unlink(f.name)
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _lookup(name: str) -> RemoteFile:
    if name in REGISTRY:
        return REGISTRY[name]
    by_file_name = [f for f in REGISTRY.values() if f.name == name]
    if len(by_file_name) == 1:
        return by_file_name[0]
    known = ", ".join(sorted(REGISTRY))
    raise DataError(f"unknown data file {name!r}; known files are: {known}")


def _open_url(url: str, timeout: float):
    """Open ``url`` for reading (indirection so tests can substitute an opener)."""
    request = urllib.request.Request(url, headers={"User-Agent": "pcfair"})
    return urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 (https/file only)


def _by_hand(entry: RemoteFile, home: Path) -> str:
    """The sentence telling a user how to put the file in place themselves."""
    target = home / entry.path
    if entry.url is None:
        return f"it has no public download URL: place the file by hand at {target}."
    return f"download it by hand from {entry.url} and place it at {target}."


def _verify_cached(entry: RemoteFile, path: Path) -> None:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key in _VERIFIED:
        return
    got = file_sha256(path)
    if got != entry.sha256:
        raise ChecksumError(
            f"data file {entry.name!r} in {path.parent} has sha256 {got}, expected "
            f"{entry.sha256}; the file is corrupt or a different version. Delete {path} so "
            "that it is downloaded again, or replace it with the published file."
        )
    _VERIFIED.add(key)


def _download(entry: RemoteFile, target: Path, home: Path) -> None:
    if entry.url is None:
        raise DatasetNotFoundError(
            f"data file {entry.name!r} is not in the cache directory {target.parent}; "
            + _by_hand(entry, home)
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{entry.name}.", suffix=".part")
    except OSError as exc:
        raise DatasetNotFoundError(
            f"data file {entry.name!r} is not in the cache directory {target.parent}, and that "
            f"directory is not writable ({exc}); " + _by_hand(entry, home)
        ) from exc
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            try:
                with _open_url(entry.url, DOWNLOAD_TIMEOUT) as response:
                    while chunk := response.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
            except (urllib.error.URLError, OSError, ValueError) as exc:
                reason = getattr(exc, "reason", exc)
                raise DatasetNotFoundError(
                    f"data file {entry.name!r} is not in the cache directory {target.parent} "
                    f"and could not be downloaded from {entry.url} ({reason}). "
                    "Without network access, " + _by_hand(entry, home)
                ) from exc
        got = digest.hexdigest()
        if got != entry.sha256:
            raise ChecksumError(
                f"download of {entry.name!r} from {entry.url} has sha256 {got}, expected "
                f"{entry.sha256}; the file was discarded and nothing was written to "
                f"{target.parent}."
            )
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    stat = target.stat()
    _VERIFIED.add((str(target.resolve()), stat.st_size, stat.st_mtime_ns))


def fetch_file(
    name: str,
    *,
    data_home: str | os.PathLike[str] | None = None,
    download_if_missing: bool = True,
) -> Path:
    """Return the local path of a registered data file, downloading it if needed.

    A file already in the cache is read offline; its sha256 is checked once per process. A
    missing file is downloaded from its public URL (when ``download_if_missing``), checked,
    and moved into place.

    Parameters
    ----------
    name : str
        Registry key, i.e. the path relative to the cache (``"raw/adult.data"``,
        ``"compas_binerized.csv"``), or a file name that is unique in the registry
        (``"adult.data"``).
    data_home : str or path-like, optional
        Cache directory; see :func:`get_data_home`.
    download_if_missing : bool, default True
        If False, a missing file raises instead of being downloaded.

    Returns
    -------
    pathlib.Path
        Path of the verified file.

    Raises
    ------
    DatasetNotFoundError
        The file is missing and could not be downloaded (no network, not allowed, no URL,
        cache not writable). The message names the file, the directory and the URL.
    ChecksumError
        The cached or downloaded file has the wrong sha256. A bad download leaves nothing
        behind.
    DataError
        ``name`` is not a registered file.

    Examples
    --------
    >>> from pcfair.datasets import fetch_file
    >>> fetch_file("adult.data").name
    'adult.data'
    """
    entry = _lookup(name)
    home = get_data_home(data_home)
    target = home / entry.path
    if target.is_file():
        _verify_cached(entry, target)
        return target
    if not download_if_missing:
        raise DatasetNotFoundError(
            f"data file {entry.name!r} is not in the cache directory {target.parent} and "
            f"download_if_missing=False; {_by_hand(entry, home)[:-1]}, or point data_home "
            f"or ${ENV_VAR} at a folder that holds it."
        )
    _download(entry, target, home)
    return target
