"""The fairness definitions a Conditional Bias Scan can audit (paper Table 1).

Each definition chooses an event variable I and a conditioning variable C among the outcome Y,
the probabilistic prediction P and the binarized recommendation Pbin:

===============================  ======  ======  =====================================
family / predictions             I       C       score
===============================  ======  ======  =====================================
separation / probabilities       P       Y       Gaussian on logit differences
separation / recommendations     Pbin    Y       Bernoulli
sufficiency / probabilities      Y       P       Bernoulli (P enters Î's model as logit)
sufficiency / recommendations    Y       Pbin    Bernoulli
===============================  ======  ======  =====================================

A *value-conditional* scan keeps only rows with ``C == condition_value`` (C binary only), and
``event=0`` audits the complementary event (``1 - I``): for example the false negative rate is
separation for recommendations with ``condition_value=1, event=0``. :data:`DEFINITIONS` names
every row of Table 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from pcfair.audits.cbs.options import CBSOptionError, check_choice

__all__ = ["DEFINITIONS", "FAMILIES", "PREDICTIONS", "FairnessDefinition", "resolve_definition"]

FAMILIES = ("separation", "sufficiency")
PREDICTIONS = ("probabilities", "recommendations")


@dataclass(frozen=True)
class FairnessDefinition:
    """One scan type of Table 1.

    Parameters
    ----------
    family : {"separation", "sufficiency"}
        Separation conditions on the outcome Y; sufficiency on the prediction.
    predictions : {"probabilities", "recommendations"}
        Audit the probabilities P or the binarized recommendations Pbin.
    condition_value : {None, 0, 1}
        Value-conditional scan on ``C == condition_value`` (C = Y or Pbin only).
    event : {0, 1}
        1 audits ``I`` itself, 0 the complementary event ``1 - I``.
    name : str
        A label for reports.

    Examples
    --------
    >>> d = FairnessDefinition("separation", "recommendations", condition_value=0)
    >>> d.event_variable, d.condition_variable, d.score
    ('Pbin', 'Y', 'bernoulli')
    """

    family: str = "separation"
    predictions: str = "probabilities"
    condition_value: int | None = None
    event: int = 1
    name: str = ""

    def __post_init__(self):
        check_choice("family", self.family, FAMILIES)
        check_choice("predictions", self.predictions, PREDICTIONS)
        if self.event not in (0, 1) or isinstance(self.event, bool):
            raise CBSOptionError(f"event={self.event!r} must be 0 or 1")
        if self.condition_value is not None:
            if self.condition_value not in (0, 1) or isinstance(self.condition_value, bool):
                raise CBSOptionError(
                    f"condition_value={self.condition_value!r} must be None, 0 or 1"
                )
            if self.family == "sufficiency" and self.predictions == "probabilities":
                raise CBSOptionError(
                    "condition_value must be None for sufficiency for probabilities: the "
                    "conditioning variable P is continuous"
                )
        if not self.name:
            object.__setattr__(self, "name", self._default_name())

    def _default_name(self) -> str:
        key = (self.family, self.predictions, self.condition_value, self.event)
        for name, family, predictions, cond, event in _TABLE_1:
            if (family, predictions, cond, event) == key:
                return name
        return f"{self.family}_{self.predictions}"

    @property
    def event_variable(self) -> str:
        """I: ``"P"``, ``"Pbin"`` or ``"Y"``."""
        if self.family == "separation":
            return "P" if self.predictions == "probabilities" else "Pbin"
        return "Y"

    @property
    def condition_variable(self) -> str:
        """C: ``"Y"``, ``"P"`` or ``"Pbin"``."""
        if self.family == "separation":
            return "Y"
        return "P" if self.predictions == "probabilities" else "Pbin"

    @property
    def score(self) -> str:
        """``"gaussian"`` for separation for probabilities, ``"bernoulli"`` otherwise."""
        if self.family == "separation" and self.predictions == "probabilities":
            return "gaussian"
        return "bernoulli"

    def describe(self) -> str:
        """Readable statement such as ``Pr(Pbin=1 | Y=0, X) independent of A``."""
        ev, c = self.event_variable, self.condition_variable
        cond = c if self.condition_value is None else f"{c}={self.condition_value}"
        if ev == "P":
            lhs = "E[P" if self.event == 1 else "E[1-P"
            return f"{lhs} | {cond}, X] independent of A"
        return f"Pr({ev}={self.event} | {cond}, X) independent of A"


_TABLE_1 = [
    # name, family, predictions, condition value, event
    # separation: conditioning on the outcome Y
    ("separation_probabilities", "separation", "probabilities", None, 1),
    ("balance_positive_class", "separation", "probabilities", 1, 1),
    ("balance_negative_class", "separation", "probabilities", 0, 1),
    ("separation_recommendations", "separation", "recommendations", None, 1),
    ("separation_recommendations_negative", "separation", "recommendations", None, 0),
    ("tpr", "separation", "recommendations", 1, 1),
    ("fnr", "separation", "recommendations", 1, 0),
    ("fpr", "separation", "recommendations", 0, 1),
    ("tnr", "separation", "recommendations", 0, 0),
    # sufficiency: conditioning on the prediction
    ("sufficiency_probabilities", "sufficiency", "probabilities", None, 1),
    ("sufficiency_probabilities_negative", "sufficiency", "probabilities", None, 0),
    ("sufficiency_recommendations", "sufficiency", "recommendations", None, 1),
    ("sufficiency_recommendations_negative", "sufficiency", "recommendations", None, 0),
    ("ppv", "sufficiency", "recommendations", 1, 1),
    ("fdr", "sufficiency", "recommendations", 1, 0),
    ("false_omission_rate", "sufficiency", "recommendations", 0, 1),
    ("npv", "sufficiency", "recommendations", 0, 0),
]

#: Every definition of the paper's Table 1, by name.
DEFINITIONS: dict[str, FairnessDefinition] = {
    name: FairnessDefinition(family, predictions, cond, event, name)
    for name, family, predictions, cond, event in _TABLE_1
}


def resolve_definition(definition: str | FairnessDefinition) -> FairnessDefinition:
    """Look up a definition by name (case-insensitive) or pass a :class:`FairnessDefinition`.

    Raises
    ------
    CBSOptionError
        Unknown name; the message lists the valid names.

    Examples
    --------
    >>> resolve_definition("FPR").describe()
    'Pr(Pbin=1 | Y=0, X) independent of A'
    """
    if isinstance(definition, FairnessDefinition):
        return definition
    if isinstance(definition, str) and definition.lower() in DEFINITIONS:
        return DEFINITIONS[definition.lower()]
    raise CBSOptionError(
        f"definition={definition!r} is not valid; choose one of {', '.join(sorted(DEFINITIONS))}"
    )
