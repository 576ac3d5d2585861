"""Tests of hipexplore/bench/counters/ (a package so basenames may repeat across folders)."""
