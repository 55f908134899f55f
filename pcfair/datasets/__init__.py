"""Datasets: cached public fairness benchmarks, paper preprocessing recipes, planted data.

Loaders download from the public source into a cache directory (the ``data_home`` argument,
else the ``PCFAIR_DATA`` environment variable, else ``~/.pcfair_data``), verify a sha256 and
read offline afterwards. The cache uses the upstream file names: the binarized tables of the
papers at the top level (``compas_binerized.csv``, ``compas_binary.net.txt``, ...) and the raw
public files under ``raw/`` (``compas-scores-two-years.csv``, ``adult.data``, ``adult.test``,
``adult.names``, ``german.data``).

- :func:`fetch_compas`, :func:`fetch_adult`, :func:`fetch_german`: raw public data as tidy
  DataFrames, optionally preprocessed as the papers describe.
- :func:`load_binarized`: the binarized COMPAS / Adult / German / ACS-Income tables, with the
  upstream CSV's column names (those of the shipped circuits) and the value labels of their
  binarisation recipes (``Dataset.value_labels``; ``labels=True`` puts them in the frame).
  ``python -m pcfair.datasets NAME [--labels] --out FILE`` writes one as CSV.
- :func:`binarize`, :func:`discretize` and the recipes in :mod:`pcfair.datasets.preprocessing`.
- :func:`make_planted`: synthetic data with a discrimination pattern of exact, known size.

Every loader returns a :class:`Dataset` (the frame, the decision column, its favourable value
and the sensitive columns), or ``(X, y)`` with ``return_X_y=True``.
"""

from pcfair.datasets._adult import fetch_adult
from pcfair.datasets._binarized import BINARIZED_NAMES, load_binarized
from pcfair.datasets._cache import fetch_file, file_sha256, get_data_home
from pcfair.datasets._compas import fetch_compas
from pcfair.datasets._dataset import Dataset
from pcfair.datasets._errors import ChecksumError, DatasetNotFoundError
from pcfair.datasets._german import fetch_german
from pcfair.datasets._netfile import NetSpec, read_net_file
from pcfair.datasets.preprocessing import (
    binarize,
    binarize_adult,
    binarize_german,
    discretize,
    filter_propublica,
    prepare_compas_cbs,
)
from pcfair.datasets.synthetic import PlantedTruth, make_planted

__all__ = [
    "BINARIZED_NAMES",
    "ChecksumError",
    "Dataset",
    "DatasetNotFoundError",
    "NetSpec",
    "PlantedTruth",
    "binarize",
    "binarize_adult",
    "binarize_german",
    "discretize",
    "fetch_adult",
    "fetch_compas",
    "fetch_file",
    "fetch_german",
    "file_sha256",
    "filter_propublica",
    "get_data_home",
    "load_binarized",
    "make_planted",
    "prepare_compas_cbs",
    "read_net_file",
]
