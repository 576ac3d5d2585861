"""Old name of ``hipexplore.readable`` (how numbers read), kept until bench/ moves: bench/sweeprun.py
and bench/rotating.py still import ``format_bytes`` from here; everything else imports readable."""
from .readable import *  # noqa: F401,F403 - kept until bench/ moves
