"""distviz.viz."""
