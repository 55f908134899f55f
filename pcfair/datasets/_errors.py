"""Exception classes specific to :mod:`pcfair.datasets`.

Both derive from :class:`pcfair.errors.DataError`, so ``except DataError`` (or
``except PCFairError``) catches them.
"""

from __future__ import annotations

from pcfair.errors import DataError


class DatasetNotFoundError(DataError, FileNotFoundError):
    """A data file is not in the cache directory and could not be downloaded.

    The message names the file, the cache directory and, where one is known, the URL to
    download it from by hand. It is also a :class:`FileNotFoundError`, so code that handles
    missing files generically keeps working.
    """


class ChecksumError(DataError):
    """A data file's sha256 digest differs from the one recorded in the registry.

    Raised for a download (the partial file is removed, nothing is left in the cache) and for
    a file already in the cache (it is left in place; the message says how to replace it).
    """
