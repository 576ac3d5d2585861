"""Tests of hipexplore/compile/ (a package so basenames may repeat across folders)."""
