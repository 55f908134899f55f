"""Chow-Liu trees: pairwise mutual information and the maximum spanning tree."""

from __future__ import annotations

import networkx as nx
import numpy as np


def pair_counts(codes: np.ndarray, cards: np.ndarray, i: int, j: int,
                weights: np.ndarray | None = None) -> np.ndarray:
    """The ``cards[i] × cards[j]`` table of joint counts of columns i and j."""
    flat = codes[:, i].astype(np.int64) * cards[j] + codes[:, j]
    return np.bincount(flat, weights=weights, minlength=cards[i] * cards[j]).reshape(
        cards[i], cards[j]).astype(float)


def mutual_information(codes: np.ndarray, cards: np.ndarray, pseudocount: float = 1.0
                       ) -> np.ndarray:
    """Pairwise mutual information (nats) from Laplace-smoothed counts.

    The joint of each pair is ``(n_ij + α/(k_i k_j)) / (N + α)``; its marginals are used for
    the product term, so MI is ≥ 0 and 0 when the smoothed joint factorises.

    Examples
    --------
    >>> x = np.array([[0, 0], [1, 1], [0, 0], [1, 1]])
    >>> float(round(mutual_information(x, np.array([2, 2]), 0.0)[0, 1], 6))
    0.693147
    """
    n, m = codes.shape
    mi = np.zeros((m, m))
    for i in range(m):
        for j in range(i + 1, m):
            joint = pair_counts(codes, cards, i, j) + pseudocount / (cards[i] * cards[j])
            joint /= joint.sum()
            pi = joint.sum(axis=1, keepdims=True)
            pj = joint.sum(axis=0, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                terms = np.where(joint > 0, joint * np.log(joint / (pi * pj)), 0.0)
            mi[i, j] = mi[j, i] = max(0.0, float(terms.sum()))
    return mi


def maximum_spanning_tree(weights: np.ndarray, root: int = 0) -> np.ndarray:
    """Parent of each node in the maximum spanning tree of a complete weighted graph, rooted at
    ``root`` (−1 for the root). Ties are broken by networkx's Kruskal order."""
    m = weights.shape[0]
    g = nx.Graph()
    g.add_nodes_from(range(m))
    for i in range(m):
        for j in range(i + 1, m):
            g.add_edge(i, j, weight=float(weights[i, j]))
    tree = nx.maximum_spanning_tree(g, algorithm="kruskal")
    parent = np.full(m, -1, np.int64)
    for u, v in nx.bfs_edges(tree, root):
        parent[v] = u
    return parent
