"""How a raw table meets a model: its columns as categorical variables, and the recipe.

Two modules, below everything that reads a table or a model file (the circuit's readers and
writers, the learners, the certifier's ``data=``, the audits, the command line):

- :mod:`pcfair.tables.data`: a DataFrame as categorical codes (placeholders, continuous
  columns and their bins, the decision column);
- :mod:`pcfair.tables.recipe`: the :class:`~pcfair.tables.recipe.Recipe` a learned model
  carries, which turns raw rows into the model's values wherever the two meet.

They import only the circuit's :class:`~pcfair.circuit.variables.Variables` and the errors, so
a model reader may read a recipe without importing a learner.

Examples
--------
>>> import pandas as pd
>>> from pcfair.tables import bin_columns
>>> binned, edges = bin_columns(pd.DataFrame({"age": range(30)}), 2)
>>> list(binned["age"].cat.categories)
['[0, 14.5)', '[14.5, 29]']
"""

from pcfair.tables.data import MAX_NUMERIC_VALUES, apply_bins, bin_columns, continuous_columns
from pcfair.tables.recipe import Recipe

__all__ = ["MAX_NUMERIC_VALUES", "Recipe", "apply_bins", "bin_columns", "continuous_columns"]
