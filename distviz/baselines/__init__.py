"""Non-boosting baselines of the papers distviz reproduces (the multivariate NGBoost paper's NN row)."""

from distviz.baselines.mvn_network import MVNNetwork

__all__ = ["MVNNetwork"]
