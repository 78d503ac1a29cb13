"""distviz.families."""
