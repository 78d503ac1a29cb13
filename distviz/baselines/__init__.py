"""Baselines of the papers distviz reproduces, fitted without distviz's boosting engine: the multivariate NGBoost
paper's NN row (``MVNNetwork``) and its scikit-learn boosting row (``skGB``)."""

from distviz.baselines.mvn_network import MVNNetwork
from distviz.baselines.skgb import skGB

__all__ = ["MVNNetwork", "skGB"]
