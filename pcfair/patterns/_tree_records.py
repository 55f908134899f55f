"""The named records the compiled tree kernels take (numba reads a
:func:`~collections.namedtuple` of arrays as one argument, passed whole and read by field).

:class:`TreeModel` is the recognised decision-rooted tree model
(:meth:`pcfair.patterns.bounds.TreeBound.kernel_model`), read by the masses
(:mod:`pcfair.patterns._tree_mass_kernels`), the box (:mod:`pcfair.patterns._bound_kernels`),
the plateau solver and the tree search; :class:`BoxWork` is one box's scratch and result
(:func:`pcfair.patterns._bound_kernels.tree_box`). Each field is documented here once.
"""

from __future__ import annotations

from collections import namedtuple

TreeModel = namedtuple("TreeModel", ["post", "par", "card", "kp", "toff", "lt1", "lt0", "th1",
                                     "th0", "ctr", "ch_ptr", "ch_idx", "moff", "log_prior"])
TreeModel.__doc__ = """The decision-rooted tree model over flat arrays (variables by index).

- ``post``: the features in post-order (children before parents); the decision is not in it;
- ``par``: each variable's tree parent (``-1`` for the decision);
- ``card``: each variable's number of values; ``kp``: its parent's (1 for the decision's
  children, whose one "parent value" is the decision's, read from the decision branch);
- ``toff``: where variable ``v``'s tables start in ``lt1``/``lt0``/``th1``/``th0``;
- ``lt1``/``lt0``: ``log θ_d(v = k | pa = j)`` under the favourable (1) and the other (0)
  decision value, at ``toff[v] + j * card[v] + k``; ``th1``/``th0`` the same in linear space;
- ``ctr``: rule C's tables (:meth:`pcfair.patterns.bounds.TreeBound.contraction`);
- ``ch_ptr``/``ch_idx``: the children of ``v`` are ``ch_idx[ch_ptr[v]:ch_ptr[v + 1]]``;
- ``moff``: the first slot of ``v`` (slot ``moff[v] + j`` holds ``v``'s subtree given the
  parent value ``j``; rows of the box arrays and of the messages);
- ``log_prior``: ``[log P(d), log P(¬d)]``.

>>> TreeModel._fields[:3]
('post', 'par', 'card')
"""

BoxWork = namedtuple("BoxWork", ["box", "imp", "lm", "flags", "out", "dirty", "rr", "mix"])
BoxWork.__doc__ = """One box of :func:`pcfair.patterns._bound_kernels.tree_box`: its per-slot
arrays (kept between calls: the box is incremental), its result and its scratch.

- ``box[m, 0:6]``: the intervals of ``A``, ``B`` and ``D`` of slot ``m``'s subtree,
  ``box[m, 6:10]`` those of ``p_d`` and ``p_¬d``, ``box[m, 10:12]`` rule C's oscillations;
- ``imp[m, 0/1]``: the subtree's ``A`` / ``B`` evidence has probability zero under both
  decision values for every extension;
- ``lm[m, 0:4]``: the exact ``log P_δ(e_sub | pa = j)`` (``A`` under ``d``, under ``¬d``,
  ``B`` under ``d``, under ``¬d``) where the subtree has no undecided variable;
- ``flags[v]``: the subtree of ``v`` has no undecided variable; holds a variable that is or
  can become part of ``x'``; its ``A`` evidence can be non-empty; its ``B`` evidence can be;
- ``out``: ``[A_lo, A_hi, B_lo, B_hi, D_lo, D_hi, impA, impB]`` summed over the roots;
- ``dirty[v]``: ``v``'s state changed since the arrays were last filled (the box clears it);
- ``rr``, ``mix``: the scratch of rules H and M
  (:meth:`pcfair.patterns.bounds.TreeBound.scratch`); two boxes may share them.

>>> BoxWork._fields[-2:]
('rr', 'mix')
"""
