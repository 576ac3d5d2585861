"""Cross-cutting: the documentation's examples and claims, run for real."""
