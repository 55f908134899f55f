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


# ============================================================================================
# Extreme-parameter generators for the property suite (tests/patterns/test_random_models.py).
# Every generator takes a ``draw(k) -> probability vector`` (see :func:`param_drawer`) so one
# structure can carry Dirichlet mixtures, exact zeros, 1e-12 / 1 - 1e-12, ties and dyadic values.

#: the styles :func:`param_drawer` mixes, with their weights in "mixed" mode
PARAM_STYLES = ("dirichlet", "sparse", "peaked", "zero", "tiny", "near_one", "dyadic", "uniform",
                "point")
_MIXED_WEIGHTS = np.array([4, 2, 2, 2, 2, 2, 2, 1, 1], float)


def extreme_probs(rng: np.random.Generator, k: int, style: str) -> np.ndarray:
    """One probability vector of length ``k`` (entries sum to 1 up to rounding) in ``style``:

    ``dirichlet`` (α = 1), ``sparse`` (α = 0.05: entries down to 1e-30), ``peaked`` (α = 20),
    ``zero`` (a Dirichlet draw with exact zeros), ``tiny`` (one entry 1e-12), ``near_one`` (one
    entry 1 − 1e-12·(k−1), the others 1e-12), ``dyadic`` (multiples of 1/8, zeros allowed),
    ``uniform`` (all equal: ties), ``point`` (one-hot)."""
    if k == 1:
        return np.ones(1)
    if style == "dirichlet":
        return rng.dirichlet(np.ones(k))
    if style == "sparse":
        return rng.dirichlet(np.full(k, 0.05))
    if style == "peaked":
        return rng.dirichlet(np.full(k, 20.0))
    if style == "zero":
        p = rng.dirichlet(np.ones(k))
        n_zero = int(rng.integers(1, k)) if k > 1 else 0
        p[rng.choice(k, size=n_zero, replace=False)] = 0.0
        return p / p.sum()
    if style == "tiny":
        p = rng.dirichlet(np.ones(k))
        i = int(rng.integers(k))
        p[i] = 0.0
        p = p / p.sum() * (1 - 1e-12)
        p[i] = 1e-12
        return p
    if style == "near_one":
        p = np.full(k, 1e-12)
        p[int(rng.integers(k))] = 1.0 - 1e-12 * (k - 1)
        return p
    if style == "dyadic":
        return dyadic_probs(rng, k)
    if style == "uniform":
        return np.full(k, 1.0 / k)
    if style == "point":
        p = np.zeros(k)
        p[int(rng.integers(k))] = 1.0
        return p
    if style == "underflow":
        # some entries 10^-100 .. 10^-220: a product of two or three of them is below the
        # range of doubles, so patterns reach P(x, y) < 1e-300 (and < 1e-400)
        p = rng.dirichlet(np.ones(k))
        small = rng.choice(k, size=int(rng.integers(1, k)), replace=False)
        p[small] = 10.0 ** -rng.uniform(100, 220, size=len(small))
        rest = np.setdiff1d(np.arange(k), small)
        p[rest] *= (1 - p[small].sum()) / p[rest].sum()
        return p
    raise ValueError(f"unknown style {style!r}")


def dyadic_probs(rng: np.random.Generator, k: int, denominator: int = 8,
                 zeros: bool = True) -> np.ndarray:
    """``k`` multiples of ``1/denominator`` summing to exactly 1 (exact in binary floating
    point); with ``zeros`` some entries may be 0."""
    while True:
        cuts = np.sort(rng.integers(0, denominator + 1, size=k - 1))
        counts = np.diff(np.concatenate([[0], cuts, [denominator]]))
        if zeros or np.all(counts > 0):
            return counts / denominator


def param_drawer(rng: np.random.Generator, mode: str = "mixed", tie_rate: float = 0.15):
    """A ``draw(k)`` function for the generators below.

    ``mode``: ``"mixed"`` (a style per call, weighted towards Dirichlet), ``"dyadic"`` (every
    vector dyadic, no zero in sums' weights is forced), ``"positive"`` (Dirichlet α = 1, no
    extreme values), ``"rare"`` (mostly 1e-12 / sparse vectors: joint probabilities below
    1e-15), ``"underflow"`` (mostly vectors with entries of 1e-100 to 1e-220, some with
    zeros or ties: joint probabilities below the range of doubles), or one style of
    :data:`PARAM_STYLES`. With probability ``tie_rate`` a vector drawn
    before with the same length is repeated (duplicated parameters: ties, independences)."""
    seen: dict[int, list[np.ndarray]] = {}

    def draw(k: int) -> np.ndarray:
        if seen.get(k) and rng.random() < tie_rate:
            prev = seen[k]
            return prev[int(rng.integers(len(prev)))].copy()
        if mode == "mixed":
            style = PARAM_STYLES[int(rng.choice(len(PARAM_STYLES),
                                                p=_MIXED_WEIGHTS / _MIXED_WEIGHTS.sum()))]
        elif mode == "dyadic":
            style = "dyadic"
        elif mode == "positive":
            style = "dirichlet"
        elif mode == "rare":
            style = ("tiny", "near_one", "sparse", "dirichlet")[int(rng.integers(4))]
        elif mode == "underflow":
            style = ("underflow", "underflow", "underflow", "zero", "dirichlet",
                     "uniform")[int(rng.integers(6))]
        else:
            style = mode
        p = extreme_probs(rng, k, style)
        seen.setdefault(k, []).append(p)
        return p

    return draw


def _builder(cards):
    return CircuitBuilder({f"x{i}": list(range(c)) for i, c in enumerate(cards)})


def naive_bayes_x(rng: np.random.Generator, cards: list[int], decision: int, draw):
    """Naive Bayes with the decision at the root: ``Σ_d P(d)·[D=d]·Π_i P(x_i | d)``, every
    parameter from ``draw``. ``cards[decision]`` must be 2. The vtree puts D at the root."""
    b = _builder(cards)
    feats = [v for v in range(len(cards)) if v != decision]
    prior = draw(2)
    elems = []
    for dv in range(2):
        leaves = [b.categorical(f"x{v}", draw(cards[v])) for v in feats]
        sub = leaves[0] if len(leaves) == 1 else _nest_products(b, leaves)
        elems.append((b.indicator(f"x{decision}", dv), sub, float(prior[dv])))
    nested = _nest([int(v) for v in feats])
    return b.build(b.decision(elems), vtree=Vtree.from_nested((decision, nested)))


def _nest(items):
    """``[a, b, c] -> (a, (b, c))``."""
    return items[0] if len(items) == 1 else (items[0], _nest(items[1:]))


def _nest_products(b, nodes):
    """Binary products nested like :func:`_nest` (so they follow the same vtree)."""
    return nodes[0] if len(nodes) == 1 else b.product(nodes[0], _nest_products(b, nodes[1:]))


def deep_vtree(rng: np.random.Generator, n: int, leaf: int) -> Vtree:
    """A vtree on ``n`` variables with ``leaf`` at depth n−1 (deepest possible): a right- or
    left-linear vtree over a random order of the others, ``leaf`` at the far end."""
    others = [int(v) for v in rng.permutation([v for v in range(n) if v != leaf])]
    if rng.random() < 0.5:
        return Vtree.from_nested(_nest(others + [leaf]))  # (a, (b, (c, leaf)))

    def left(xs):
        return xs[0] if len(xs) == 1 else (left(xs[:-1]), xs[-1])

    return Vtree.from_nested(left([leaf] + others))  # (((leaf, a), b), c)


def random_psdd_x(rng: np.random.Generator, cards: list[int], draw, vtree: Vtree | None = None,
                  max_elements: int = 3, shared_primes: bool = False,
                  indicator_rate: float = 0.2):
    """:func:`random_psdd` with every parameter (sum weights, leaves, and the leaves of the
    primes) from ``draw``: smooth, deterministic, structured-decomposable on ``vtree`` (random
    if None)."""
    n = len(cards)
    vt = vtree if vtree is not None else random_vtree(rng, n)
    b = _builder(cards)

    def gen(v: int):
        if vt.var[v] >= 0:
            x = int(vt.var[v])
            if rng.random() < indicator_rate:
                return b.indicator(f"x{x}", int(rng.integers(cards[x])))
            return b.categorical(f"x{x}", draw(cards[x]))
        k = int(rng.integers(1, max_elements + 1))
        primes = partition(int(vt.left[v]), k)
        elements = [(pr, gen(int(vt.right[v]))) for pr in primes]
        if shared_primes and rng.random() < 0.5:
            subs = partition(int(vt.right[v]), 2)
            if len(subs) == 2:
                elements = [(primes[0], s_) for s_ in subs] + elements[1:]
        ws = draw(len(elements))
        return b.decision([(pr, sb, float(w)) for (pr, sb), w in zip(elements, ws)])

    def partition(v: int, k: int) -> list[int]:
        if vt.var[v] >= 0:
            x = int(vt.var[v])
            k = min(k, cards[x])
            groups = np.array_split(rng.permutation(cards[x]), k)
            out = []
            for g in groups:
                p = np.zeros(cards[x])
                p[g] = draw(len(g))
                if p.sum() <= 0:  # cannot happen (draw sums to 1) but keep the support
                    p[g] = 1.0 / len(g)
                out.append(b.categorical(f"x{x}", p) if len(g) > 1 or rng.random() < 0.5
                           else b.indicator(f"x{x}", int(g[0])))
            return out
        lefts = partition(int(vt.left[v]), k)
        return [b.decision([(pr, gen(int(vt.right[v])), 1.0)]) for pr in lefts]

    return b.build(gen(vt.root), vtree=vt)


def random_tree(rng: np.random.Generator, n: int, root: int) -> list[int]:
    """Parent of each of ``n`` nodes in a random tree rooted at ``root`` (−1 for the root)."""
    order = [root] + [int(v) for v in rng.permutation([v for v in range(n) if v != root])]
    parent = [-1] * n
    for i, v in enumerate(order[1:], start=1):
        parent[v] = order[int(rng.integers(i))]
    return parent


def tree_bn_x(rng: np.random.Generator, cards: list[int], draw, root: int | None = None,
              parent: list[int] | None = None):
    """A tree Bayesian network (the shape of a Chow-Liu tree) compiled to a deterministic,
    structured-decomposable circuit: node ``v`` given its parent's value is a decision over
    ``v``'s values, ``Σ_a P(v=a | pa)·[v=a]·Π_children C(c | a)``; leaves of the tree are
    categorical leaves. The vtree is ``(v, (T(c1), (T(c2), ...)))``. Every CPT row from
    ``draw``. ``root`` (or a full ``parent`` list) places the tree's root anywhere."""
    n = len(cards)
    if parent is None:
        parent = random_tree(rng, n, int(rng.integers(n)) if root is None else root)
    children = {v: [c for c in range(n) if parent[c] == v] for v in range(n)}
    b = _builder(cards)
    cpt = {v: ([draw(cards[v])] if parent[v] < 0 else
               [draw(cards[v]) for _ in range(cards[parent[v]])]) for v in range(n)}
    memo: dict = {}

    def node(v: int, row: int):
        key = (v, row)
        if key in memo:
            return memo[key]
        probs = cpt[v][row]
        if not children[v]:
            out = b.categorical(f"x{v}", probs)
        else:
            elems = []
            for a in range(cards[v]):
                subs = [node(c, a) for c in children[v]]
                elems.append((b.indicator(f"x{v}", a), _nest_products(b, subs), float(probs[a])))
            out = b.decision(elems)
        memo[key] = out
        return out

    def vtree_of(v: int):
        if not children[v]:
            return v
        return (v, _nest([vtree_of(c) for c in children[v]]))

    r = parent.index(-1)
    return b.build(node(r, 0), vtree=Vtree.from_nested(vtree_of(r)))


def mixture_x(rng: np.random.Generator, cards: list[int], draw, components: int = 2,
              naive_bayes_decision: int | None = None):
    """A non-deterministic mixture (smooth, decomposable): of fully factorised components, or
    with ``naive_bayes_decision`` of naive Bayes models in that decision (decision inside)."""
    b = _builder(cards)
    comps = []
    for _ in range(components):
        if naive_bayes_decision is None:
            comps.append(b.product(*[b.categorical(f"x{i}", draw(c))
                                     for i, c in enumerate(cards)]))
        else:
            d = naive_bayes_decision
            prior = draw(2)
            feats = [v for v in range(len(cards)) if v != d]
            elems = [(b.indicator(f"x{d}", dv),
                      _nest_products(b, [b.categorical(f"x{v}", draw(cards[v])) for v in feats]),
                      float(prior[dv])) for dv in range(2)]
            comps.append(b.decision(elems))
    ws = draw(components)
    if ws.max() <= 0:
        ws = np.full(components, 1.0 / components)
    return b.build(b.sum(comps, ws))


# ---------------------------------------------------------------- constant-factor variants


def root_edge_mask(pc) -> np.ndarray:
    """Boolean mask over ``pc.edge_logw`` of the root's sum elements (empty if the root is not
    a sum)."""
    from pcfair.circuit.circuit import SUM

    mask = np.zeros(len(pc.edge_logw), bool)
    r = pc.root
    if int(pc.kind[r]) == SUM:
        mask[int(pc.edge_ptr[r]):int(pc.edge_ptr[r + 1])] = True
    return mask


def shift_root_logw(pc, c: float):
    """The same circuit with ``c`` added to every root element's log-weight: the function is
    multiplied by ``e^c`` and the normalised distribution is unchanged. None if the root is
    not a sum."""
    mask = root_edge_mask(pc)
    if not mask.any():
        return None
    return pc.with_parameters(pc.edge_logw + c * mask)


def leaf_scalable_variables(pc) -> list[int]:
    """Variables whose input nodes are all categorical leaves (no indicator): scaling all of
    them by one constant multiplies the circuit's function by that constant (every induced
    tree of a smooth, decomposable circuit holds exactly one input node per variable)."""
    from pcfair.circuit.circuit import CATEGORICAL, INDICATOR

    out = []
    for v in range(pc.num_variables):
        on_v = pc.var == v
        if np.any(on_v & (pc.kind == CATEGORICAL)) and not np.any(on_v & (pc.kind == INDICATOR)):
            out.append(v)
    return out


def scale_leaves(pc, var: int, c: float):
    """The same circuit with ``c`` added to the log-parameters of every categorical leaf on
    ``var`` (see :func:`leaf_scalable_variables`; None if ``var`` has an indicator leaf)."""
    from pcfair.circuit.circuit import CATEGORICAL

    if var not in leaf_scalable_variables(pc):
        return None
    params = pc.params.copy()
    for i in np.flatnonzero((pc.kind == CATEGORICAL) & (pc.var == var)):
        lo = int(pc.param_ptr[i])
        params[lo:lo + int(pc.param_len[i])] += c
    return pc.with_parameters(pc.edge_logw, params)


def log_normaliser(pc) -> float:
    """``log Z`` from the empty evidence (finite even when ``Z`` overflows a float)."""
    return float(pc.log_marginal(np.full((1, pc.num_variables), -1, np.int32))[0])



def rare_witness_model():
    """A naive Bayes model over ``d, s, z, w`` whose first witness at δ = 0.05 is rare
    (``s=1 | z=1, ...``, P(x, y) ≈ 3e-7) while supported ones exist (the strongest is
    ``s=1 | w=0``, Δ = 0.1875; the search's first supported one is ``s=0``, Δ = 0.067)."""
    b = CircuitBuilder({"d": [0, 1], "s": [0, 1], "z": [0, 1], "w": [0, 1, 2]})
    return b.build(b.decision([
        (b.indicator("d", 1), b.product(b.categorical("s", [0.5, 0.5]),
                                        b.categorical("z", [1 - 1e-6, 1e-6]),
                                        b.categorical("w", [0.2, 0.3, 0.5])), 0.9),
        (b.indicator("d", 0), b.product(b.categorical("s", [0.9, 0.1]),
                                        b.categorical("z", [1 - 99e-6, 99e-6]),
                                        b.categorical("w", [0.6, 0.3, 0.1])), 0.1)]))
