"""Audit methods for any classifier: Conditional Bias Scan (:mod:`.cbs`), TestSGD
(:mod:`.testsgd`), structured regression (:mod:`.structured_regression`) and AVOIR
(:mod:`.avoir`).

They share one model adapter, :func:`as_model` (``model=`` as a Circuit, a PCClassifier, an
estimator, a callable or a column of stored predictions), and one result shape,
:class:`AuditResult` (``to_frame``, ``to_dict``, ``plot``).
"""

from pcfair.audits._model import Model, as_model
from pcfair.audits._result import AuditResult

__all__ = ["AuditResult", "Model", "as_model"]
