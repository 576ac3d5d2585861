"""Tests of hipexplore/kernels/ (a package so basenames may repeat across folders)."""
