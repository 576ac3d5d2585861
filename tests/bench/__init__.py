"""Tests of hipexplore/bench/ (a package so basenames may repeat across folders)."""
