"""distviz.trees."""
