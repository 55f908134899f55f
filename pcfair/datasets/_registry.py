"""The registry of data files pcfair knows how to fetch: cache path, public URL and sha256.

Cache paths use the upstream file names, so a folder laid out like the project's shared data
folder (binarized tables at the top level, raw public files under ``raw/``) is a valid cache.

The digests were computed from the published files: the LearnFairNB tables and the ACS Income
table from their authors' GitHub repositories (pinned to a commit, so the bytes cannot drift),
the COMPAS two-year file from ProPublica's ``compas-analysis`` repository, and the Adult and
German Credit files from the UCI Machine Learning Repository.
"""

from __future__ import annotations

from dataclasses import dataclass

_LEARNFAIRNB = (
    "https://raw.githubusercontent.com/UCLA-StarAI/LearnFairNB/"
    "f922d885399955737bd9f16a104f700004cd3846/data/processed_data/"
)
_PC_PATTERNS = (
    "https://raw.githubusercontent.com/UCLA-StarAI/PC-DiscriminationPatterns/"
    "62e6a0f8a5e8cf5791348333f14474480c30d360/data/"
)
_PROPUBLICA = "https://raw.githubusercontent.com/propublica/compas-analysis/master/"
_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/"


@dataclass(frozen=True)
class RemoteFile:
    """One data file: where it lives in the cache, where it comes from, and its digest.

    Attributes
    ----------
    path : str
        Path relative to the cache directory, with ``/`` separators (``"raw/adult.data"``).
    url : str or None
        Public download URL. ``None`` means the file must be placed in the cache by hand.
    sha256 : str
        Expected lowercase hex sha256 digest of the file's bytes.
    description : str
        One line saying what the file is.
    """

    path: str
    url: str | None
    sha256: str
    description: str

    @property
    def name(self) -> str:
        """The file name without its folder."""
        return self.path.rsplit("/", 1)[-1]


def _entries() -> dict[str, RemoteFile]:
    files = [
        RemoteFile(
            "compas_binerized.csv",
            _LEARNFAIRNB + "compas_binerized.csv",
            "fa53af4fd47b8e7083f5f81716a408376faec9d6ce93b9752940aa81e1b001d8",
            "LearnFairNB binarized COMPAS (Broward County assessments), 48,834 rows",
        ),
        RemoteFile(
            "compas_binary.net.txt",
            _LEARNFAIRNB + "compas_binary.net.txt",
            "668c626baa10d58ea8be14bd99b45ee092b3a1bba36c5d36ffe37ac7382f4e60",
            "LearnFairNB variable list for COMPAS: target and sensitive flags",
        ),
        RemoteFile(
            "adult_binerized.csv",
            _LEARNFAIRNB + "adult_binerized.csv",
            "834b94c695bd5aabd8a6674221a17a64b7599c97fd76c5b3a739487520e08ccd",
            "LearnFairNB binarized UCI Adult (training file), 32,561 rows",
        ),
        RemoteFile(
            "adult_binary.net.txt",
            _LEARNFAIRNB + "adult_binary.net.txt",
            "160685a9e2b3ba55025d63e74cd746508c75b9f4a1e940aa208c868db7ac2ee1",
            "LearnFairNB variable list for Adult: target and sensitive flags",
        ),
        RemoteFile(
            "german_binerized.csv",
            _LEARNFAIRNB + "german_binerized.csv",
            "7dc7412979636c51c222ed6c0ef01e5b6c77735b07cf8aa90bb9b92c9f8cc6e1",
            "LearnFairNB binarized UCI German Credit, 1,000 rows",
        ),
        RemoteFile(
            "german_binary.net.txt",
            _LEARNFAIRNB + "german_binary.net.txt",
            "84089738b0ee487d67372c968bf919684cb41b07d403196d2d7302473b31c8d9",
            "LearnFairNB variable list for German: target and sensitive flags",
        ),
        RemoteFile(
            "ACS_Income_binerized.csv",
            _PC_PATTERNS + "ACS_Income_binerized.csv",
            "51f6b14c8cb353dac8c1349c6eb4dcf8a3a38e3d9767a8c50ea4fec2266f1006",
            "binarized ACS Income of 'Certifying Fairness of Probabilistic Circuits', 195,665 rows",
        ),
        RemoteFile(
            "raw/compas-scores-two-years.csv",
            _PROPUBLICA + "compas-scores-two-years.csv",
            "c451db85908b2f7fef1d83203bedf6b71ecda0d5af468d82ae62178f91d0cc7d",
            "ProPublica COMPAS two-year recidivism file, 7,214 rows",
        ),
        RemoteFile(
            "raw/adult.data",
            _UCI + "adult/adult.data",
            "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
            "UCI Adult training file, 32,561 rows",
        ),
        RemoteFile(
            "raw/adult.test",
            _UCI + "adult/adult.test",
            "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
            "UCI Adult test file, 16,281 rows",
        ),
        RemoteFile(
            "raw/adult.names",
            _UCI + "adult/adult.names",
            "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a",
            "UCI Adult description",
        ),
        RemoteFile(
            "raw/german.data",
            _UCI + "statlog/german/german.data",
            "b21f3d81db8071257d5ff1deaeba1fd4303b62712e6fcc9715c7a86202cb5871",
            "UCI Statlog German Credit file (symbolic attributes), 1,000 rows",
        ),
    ]
    return {f.path: f for f in files}


#: Every known data file, keyed by its path relative to the cache directory.
REGISTRY: dict[str, RemoteFile] = _entries()
