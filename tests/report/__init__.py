"""Tests of hipexplore/report/ (a package so basenames may repeat across folders)."""
