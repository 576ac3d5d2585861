"""Other tools' result files, both ways: nvbench JSON (cuda-bench), pyperf JSON and the Bencher
Metric Format.

Why through the formats' own tools: teams that already benchmark keep nvbench or pyperf files and
run nvbench's compare script or ``pyperf compare_to`` in CI; a reader or writer of our own would
drift from theirs unnoticed. So nvbench files are read with cuda-bench's own reader
(``cuda.bench.results.BenchmarkResult``) and pyperf files with pyperf's objects
(``pyperf.BenchmarkSuite``), and the files written are read back in the tests by nvbench's compare
script and ``pyperf compare_to`` themselves.

``sides.load_side`` turns a path of any of these into a samples frame hipexplore's verdicts run
on, with what the source lacks said (``Side.lacks``); ``export.write_export`` writes a sweep's
result in one of them. Floor: above ``verdicts``/``bench``, below ``report`` and ``cli``.
"""
