"""Random circuits and brute-force oracles for property tests (not a test module)."""

from __future__ import annotations

import itertools

import numpy as np

from pcfair.circuit import CircuitBuilder, Vtree


def random_vtree(rng: np.random.Generator, n: int) -> Vtree:
    order = list(rng.permutation(n))

    def rec(xs):
        if len(xs) == 1:
            return int(xs[0])
        k = int(rng.integers(1, len(xs)))
        return (rec(xs[:k]), rec(xs[k:]))

    return Vtree.from_nested(rec(order))


def _probs(rng, k, zeros=True):
    p = rng.dirichlet(np.ones(k))
    if zeros and k > 1 and rng.random() < 0.25:
        p[rng.integers(k)] = 0.0
        if p.sum() == 0:
            p[0] = 1.0
        p = p / p.sum()
    return p


def random_psdd(rng: np.random.Generator, cards: list[int], vtree: Vtree | None = None,
                max_elements: int = 3, zeros: bool = True, shared_primes: bool = False):
    """A smooth, deterministic, structured-decomposable circuit on a random (or given) vtree.

    With ``shared_primes`` some decision nodes repeat a prime with mutually exclusive subs
    (determinism through the subs, the ``simple2.2`` shape)."""
    n = len(cards)
    vt = vtree if vtree is not None else random_vtree(rng, n)
    b = CircuitBuilder({f"x{i}": list(range(c)) for i, c in enumerate(cards)})

    def gen(v: int):
        if vt.var[v] >= 0:
            x = int(vt.var[v])
            if rng.random() < 0.2:
                return b.indicator(f"x{x}", int(rng.integers(cards[x])))
            return b.categorical(f"x{x}", _probs(rng, cards[x], zeros))
        k = int(rng.integers(1, max_elements + 1))
        primes = partition(int(vt.left[v]), k)
        elements = [(pr, gen(int(vt.right[v]))) for pr in primes]
        if shared_primes and rng.random() < 0.5:
            subs = partition(int(vt.right[v]), 2)
            if len(subs) == 2:
                elements = [(primes[0], s_) for s_ in subs] + elements[1:]
        ws = _probs(rng, len(elements), zeros)
        return b.decision([(pr, sb, w) for (pr, sb), w in zip(elements, ws)])

    def partition(v: int, k: int) -> list[int]:
        """Up to k nodes over vars(v) with pairwise disjoint supports."""
        if vt.var[v] >= 0:
            x = int(vt.var[v])
            k = min(k, cards[x])
            groups = np.array_split(rng.permutation(cards[x]), k)
            out = []
            for g in groups:
                p = np.zeros(cards[x])
                p[g] = rng.dirichlet(np.ones(len(g)))
                out.append(b.categorical(f"x{x}", p) if len(g) > 1 or rng.random() < 0.5
                           else b.indicator(f"x{x}", int(g[0])))
            return out
        lefts = partition(int(vt.left[v]), k)
        return [b.decision([(pr, gen(int(vt.right[v])), 1.0)]) for pr in lefts]

    return b.build(gen(vt.root), vtree=vt)


def random_mixture(rng: np.random.Generator, cards: list[int], components: int = 2):
    """A smooth, decomposable but (usually) non-deterministic mixture of fully factorised
    distributions."""
    b = CircuitBuilder({f"x{i}": list(range(c)) for i, c in enumerate(cards)})
    comps = [b.product(*[b.categorical(f"x{i}", rng.dirichlet(np.ones(c)))
                         for i, c in enumerate(cards)]) for _ in range(components)]
    return b.build(b.sum(comps, rng.dirichlet(np.ones(components))))


def all_assignments(cards: list[int]) -> np.ndarray:
    return np.array(list(itertools.product(*[range(c) for c in cards])), dtype=np.int32)


def joint_table(circuit) -> tuple[np.ndarray, np.ndarray]:
    """(assignments, probabilities) over all complete assignments, by the kernel."""
    xs = all_assignments(list(circuit.variables.cardinalities))
    return xs, np.exp(circuit.log_marginal(xs))


def brute_marginal(xs: np.ndarray, p: np.ndarray, ev: np.ndarray) -> float:
    mask = np.all((ev < 0) | (xs == ev), axis=1)
    return float(p[mask].sum())
