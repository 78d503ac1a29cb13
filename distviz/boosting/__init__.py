"""distviz.boosting."""
