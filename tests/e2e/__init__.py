"""Cross-cutting: end to end, the way a user installs and first runs hipexplore."""
