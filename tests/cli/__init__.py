"""Tests of hipexplore/cli/ (a package so basenames may repeat across folders)."""
