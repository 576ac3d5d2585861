"""Cross-cutting: tests on a real GPU (marked ``gpu``; skipped without one)."""
