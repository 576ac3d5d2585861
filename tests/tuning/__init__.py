"""Tests of hipexplore/tuning/ (a package so basenames may repeat across folders)."""
