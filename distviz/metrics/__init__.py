"""distviz.metrics."""
