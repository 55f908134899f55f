"""Tests of the Dataset container."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from pcfair.datasets import Dataset
from pcfair.errors import DataError


@pytest.fixture()
def frame():
    return pd.DataFrame({"s": [0, 1, 1], "z": [1, 0, 1], "d": [1, 0, 1]})


def test_conveniences(frame):
    ds = Dataset(frame, target="d", favorable=1, sensitive=("s",), name="toy")
    assert ds.sensitive == ["s"] and isinstance(ds.sensitive, list)
    assert ds.feature_names == ["s", "z"]
    assert list(ds.X.columns) == ["s", "z"]
    assert ds.y.tolist() == [1, 0, 1] and ds.y.name == "d"
    assert ds.n_samples == 3
    assert repr(ds) == (
        "Dataset(name='toy', n_samples=3, n_features=2, target='d', favorable=1, sensitive=['s'])"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        ds.target = "z"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"target": "y", "sensitive": ["s"]}, "target column 'y' is not in the frame"),
        ({"target": "d", "sensitive": ["race"]}, r"sensitive column\(s\) \['race'\] are not"),
        ({"target": "d", "sensitive": ["d"]}, "cannot also be sensitive"),
    ],
)
def test_validation(frame, kwargs, match):
    with pytest.raises(DataError, match=match):
        Dataset(frame, favorable=1, **kwargs)
