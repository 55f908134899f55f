"""Reader for LearnFairNB's ``*.net.txt`` variable lists.

Format (one record per line, fields separated by white space):

1. ``<count> <number>``: a header. The count is unreliable upstream (14 for Adult, which has
   13 features) and is ignored; the feature list comes from the lines that follow.
2. ``<target name> <favourable value>``.
3. One line per feature: ``<name> <1 if sensitive, else 0>``.

Blank lines are ignored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pcfair.errors import FormatError


@dataclass(frozen=True)
class NetSpec:
    """The content of a ``.net.txt`` file.

    Attributes
    ----------
    target : str
        Decision variable name.
    favorable : int
        Favourable value of the decision.
    features : list of str
        Feature names, in file order.
    sensitive : list of str
        The features flagged sensitive, in file order.
    """

    target: str
    favorable: int
    features: list[str]
    sensitive: list[str]


def _int_field(token: str, what: str, path: str, line: int) -> int:
    """An integer field; integral floats such as ``7.0`` are accepted."""
    if token.lstrip("+-").isdigit():
        return int(token)
    try:
        value = float(token)
    except ValueError:
        value = float("nan")
    if not value.is_integer():
        raise FormatError(f"{what} must be an integer, got {token!r}", path, line)
    return int(value)


def read_net_file(path: str | os.PathLike[str]) -> NetSpec:
    """Parse a LearnFairNB ``.net.txt`` file.

    Parameters
    ----------
    path : str or path-like
        The file.

    Returns
    -------
    NetSpec
        Target, favourable value, features and the sensitive subset.

    Raises
    ------
    FormatError
        A line does not have two fields, a flag is not 0/1, a name repeats, or the file has no
        target line. The error carries the path and the 1-based line number.

    Examples
    --------
    >>> from pcfair.datasets import fetch_file, read_net_file
    >>> spec = read_net_file(fetch_file("compas_binary.net.txt"))
    >>> spec.target, spec.sensitive
    ('ScoreText', ['Ethnic_Code_Text', 'MaritalStatus', 'Sex', 'Age'])
    """
    path_str = str(path)
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    records = [(i + 1, line.split()) for i, line in enumerate(lines) if line.strip()]
    if len(records) < 2:
        raise FormatError("expected a header line and a target line", path_str, len(lines) or 1)
    header_line, header = records[0]
    if len(header) != 2:
        raise FormatError(
            f"header must be '<count> <number>', got {' '.join(header)!r}", path_str, header_line
        )
    target_line, target_fields = records[1]
    if len(target_fields) != 2:
        raise FormatError(
            f"target line must be '<name> <favourable value>', got {' '.join(target_fields)!r}",
            path_str,
            target_line,
        )
    target = target_fields[0]
    favorable = _int_field(target_fields[1], "favourable value", path_str, target_line)
    features: list[str] = []
    sensitive: list[str] = []
    seen = {target}
    for line_no, fields in records[2:]:
        if len(fields) != 2:
            raise FormatError(
                f"feature line must be '<name> <0|1>', got {' '.join(fields)!r}", path_str, line_no
            )
        name, flag_token = fields
        flag = _int_field(flag_token, f"sensitive flag of {name!r}", path_str, line_no)
        if flag not in (0, 1):
            raise FormatError(
                f"sensitive flag of {name!r} must be 0 or 1, got {flag}", path_str, line_no
            )
        if name in seen:
            raise FormatError(f"variable {name!r} is listed twice", path_str, line_no)
        seen.add(name)
        features.append(name)
        if flag:
            sensitive.append(name)
    if not features:
        raise FormatError("no feature lines after the target line", path_str, target_line)
    return NetSpec(target=target, favorable=favorable, features=features, sensitive=sensitive)
