"""Cross-cutting: hostile inputs and files through the real CLI."""
