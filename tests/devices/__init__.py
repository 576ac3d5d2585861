"""Tests of hipexplore/devices/ (a package so basenames may repeat across folders)."""
