"""distviz.data."""
