"""Learning circuits from data."""

from pcfair.learn.chow_liu import maximum_spanning_tree, mutual_information
from pcfair.learn.clt import learn_pc, log_likelihood, train_valid_split
from pcfair.tables.data import MAX_NUMERIC_VALUES, apply_bins, bin_columns, continuous_columns


def __getattr__(name: str):
    if name == "PCClassifier":  # scikit-learn is imported only when the classifier is used
        from pcfair.learn.classifier import PCClassifier

        return PCClassifier
    if name == "learn_fair_pc":  # imports the certifier
        from pcfair.learn.fair import learn_fair_pc

        return learn_fair_pc
    raise AttributeError(f"module 'pcfair.learn' has no attribute {name!r}")

__all__ = ["MAX_NUMERIC_VALUES", "PCClassifier", "apply_bins", "bin_columns",
           "continuous_columns", "learn_fair_pc", "learn_pc", "log_likelihood",
           "maximum_spanning_tree", "mutual_information", "train_valid_split"]
