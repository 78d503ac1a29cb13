"""distviz.gp."""
