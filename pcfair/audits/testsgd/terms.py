"""Identity terms and the word matcher used for text data.

The term list is Table 1 of the TestSGD preprint (taken from Dixon et al. 2018). Matching is
not specified by the paper; the port matches case-insensitively, on whole words, with
multi-word terms as phrases and the longest term first, so that "african american" is one
match and not also "african" plus "american".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

__all__ = ["DIXON_TERMS", "TermMatcher"]

#: Table 1 of the paper: 48 identity terms in four categories.
DIXON_TERMS: Mapping[str, tuple[str, ...]] = {
    "gender": (
        "lesbian", "gay", "bisexual", "transgender", "trans", "queer", "lgbt", "lgbtq",
        "homosexual", "straight", "heterosexual", "male", "female", "nonbinary",
    ),
    "race": (
        "african", "african american", "black", "white", "european", "hispanic", "latino",
        "latina", "latinx", "mexican", "canadian", "american", "asian", "indian",
        "middle eastern", "chinese", "japanese",
    ),
    "religion": (
        "christian", "muslim", "jewish", "buddhist", "catholic", "protestant", "sikh",
        "taoist", "atheist",
    ),
    "age": (
        "old", "older", "young", "younger", "teenage", "millennial", "middle aged", "elderly",
    ),
}


def normalize_term(term: str) -> str:
    """Lower-case a term and collapse its inner whitespace to single spaces."""
    return " ".join(str(term).lower().split())


class TermMatcher:
    """Find and replace a fixed set of terms in text.

    Parameters
    ----------
    terms : sequence of str
        The terms to match. They are lower-cased; inner whitespace matches any run of
        whitespace in the text.

    Notes
    -----
    A term matches only as a whole word (not inside "transport" for "trans"), ignoring case.
    Longer terms are tried first at each position, so a phrase wins over its own words.

    Examples
    --------
    >>> m = TermMatcher(["african", "african american", "american"])
    >>> m.find("An African American and an american")
    ['african american', 'american']
    >>> TermMatcher(["lesbian", "gay"]).replace("I am a Lesbian", "gay")
    'I am a gay'
    """

    def __init__(self, terms: Sequence[str]):
        norm = []
        for t in terms:
            nt = normalize_term(t)
            if not nt:
                raise ValueError(f"empty term in {list(terms)!r}")
            if nt not in norm:
                norm.append(nt)
        self.terms: tuple[str, ...] = tuple(norm)
        self._index = {t: i for i, t in enumerate(self.terms)}
        alternatives = sorted(self.terms, key=lambda t: (-len(t), t))
        body = "|".join(r"\s+".join(re.escape(w) for w in t.split()) for t in alternatives)
        self.pattern = re.compile(rf"(?<!\w)(?:{body})(?!\w)", re.IGNORECASE)

    def find(self, text: str) -> list[str]:
        """Return the matched terms (normalized) in order of appearance."""
        return [normalize_term(m) for m in self.pattern.findall(text)]

    def contains_any(self, texts: Iterable[str]) -> np.ndarray:
        """Boolean array: does each text contain at least one of the terms?"""
        search = self.pattern.search
        return np.fromiter((search(t) is not None for t in texts), dtype=bool)

    def presence(self, texts: Sequence[str]) -> np.ndarray:
        """Boolean matrix of shape ``(len(texts), len(self.terms))``: which terms occur where."""
        out = np.zeros((len(texts), len(self.terms)), dtype=bool)
        index = self._index
        findall = self.pattern.findall
        for i, text in enumerate(texts):
            for m in findall(text):
                out[i, index[normalize_term(m)]] = True
        return out

    def replace(self, text: str, new_term: str) -> str:
        """Replace every matched term in ``text`` by ``new_term``."""
        return self.pattern.sub(lambda _m: new_term, text)


@functools.lru_cache(maxsize=256)
def cached_matcher(terms: tuple[str, ...]) -> TermMatcher:
    """A :class:`TermMatcher` for ``terms``, built once per distinct tuple."""
    return TermMatcher(terms)
