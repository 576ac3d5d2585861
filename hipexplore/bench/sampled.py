"""The sampled output check: launches sampled across a configuration's timed run, checked.

Why: the output check before timing (``bench.check``, ``bench.roles``) sees one launch per (kernel,
size), the first. A kernel that remembers it already computed its outputs (a device-global flag or
launch counter: flashinfer-bench-starter-kit #21), skips work after its first launch, or replays a
result it stored keyed on the input's address (tensara #238, gpu-mode reference-kernels #160)
passes that check and is then timed doing nothing. So between chunks of the timed run (a
``TimingOptions`` hook: outside every timed window, the stream idle), at chunks 1, 8, 64, ... and
after the last, at most ``HIPEXPLORE_SAMPLED_CHECKS`` times per configuration, one launch on one of
the run's own buffer sets is checked:

- its ``in``/``inout`` buffers get *fresh inputs* (the run's values rotated by a seeded shift: a
  result cached for the run's inputs is then wrong) and its ``out`` buffers the poison (every byte 0xff, a NaN,
  for floats; 0x7f for integers: an output left unwritten keeps it);
- the kernel runs once on that set, the outputs are read back and compared with the reference on the
  fresh inputs (``bench.check.compare``, on a sample of 2^20 elements first: the worst element named); a kernel without a reference
  keeps its inputs and is checked for outputs left unwritten (an element holding the poison is
  launched again over a second poison, 0xa5 bytes, and counted only if it held both, as the role
  check does);
- the set's buffers are put back as they were (the run's inputs), so the timed launches that follow
  see the same data.

The fresh inputs and the reference are the sweep's first unit's (the check before timing is too);
the later units check for outputs left unwritten. A callable (``bench.callable``) is run on the set and its own ``output``/``reference`` compared (its
buffers are its own: no fresh inputs, no poison). A failed check does not stop the sweep: it is one
``untrusted timing:`` flag on the configuration's row, naming after how many timed launches it failed
and the worst element. What it cannot see: a cache keyed on the inputs' *contents* (a fingerprint)
recomputes for fresh inputs and replays only the run's own (docs/guide/harness.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import BenchmarkError
from .trust import flag

if TYPE_CHECKING:
    from .check import CheckTarget

#: checks happen before chunks 1, FIRST * BASE**k and after the last chunk
BASE = 8
#: at most this many output elements are compared per check before the whole output is (``_compare``)
SAMPLE_ELEMENTS = 1 << 20
#: the poison bytes (first, second) by whether the dtype is floating (as ``bench.roles``)
POISON = {True: (0xFF, 0xA5), False: (0x7F, 0xA5)}


def points(limit: int) -> set[int]:
    """The chunk indices a check comes before: 1, 8, 64, ... (``limit`` - 1 of them; the last
    check is after the run)."""
    return {BASE**k for k in range(max(0, int(limit) - 1))}


def _floating(dtype: Any) -> bool:
    return bool(np.issubdtype(np.dtype(dtype), np.floating))


def _holds(arr: np.ndarray, byte: int) -> np.ndarray:
    """Which elements of ``arr`` hold ``byte`` in every byte (compared as bits: a NaN equals itself)."""
    bits = arr.reshape(-1).view(f"u{arr.dtype.itemsize}")
    return bits == int.from_bytes(bytes([byte]) * arr.dtype.itemsize, "little")


def fresh_inputs(
    spec: Any, n: int, scalars: dict[str, Any], pristine: dict[str, np.ndarray], seed: Any
) -> dict[str, np.ndarray]:
    """Every buffer's host data for a check: ``in``/``inout`` the run's own values rotated by a
    seeded shift (the same values, so the same fill rule's range, at other places: a result cached
    for the run's inputs is wrong almost everywhere; a rotation costs one copy, where a new draw of
    256 MiB took a second in every unit), ``out`` as the run put it (writable copies)."""
    rng = np.random.default_rng(seed)
    out = {}
    for a in spec.buffers():
        arr = pristine[a.name]
        if a.role in ("in", "inout") and arr.size > 1:
            out[a.name] = np.roll(arr, int(rng.integers(1, arr.size)))
        else:
            out[a.name] = np.array(arr, copy=True)
    return out


class Fresh:
    """One (kernel, size)'s fresh inputs and the reference's outputs on them, made at first use and
    shared by its configurations' checks (at 256 MiB a draw and a reference cost a second)."""

    def __init__(self, device: Any, spec: Any, unit: int) -> None:
        self.device, self.spec, self.unit = device, spec, unit
        self.host: dict[str, np.ndarray] | None = None
        self.expected: dict[str, np.ndarray] | None = None

    def get(self, sets: Any) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        if self.host is None:
            spec = self.spec
            self.host = fresh_inputs(spec, sets.n, sets.scalars, sets.pristine, [0x51, self.unit, int(sets.n)])
            if spec.check_kernel is not None:
                from .check import _expected_from_kernel

                self.expected = _expected_from_kernel(self.device, spec, _HostView(sets, self.host))
            else:
                self.expected = dict(spec.reference({k: v.copy() for k, v in self.host.items()}, sets.scalars))
        assert self.expected is not None
        return self.host, self.expected


class _HostView:
    """``sets`` with other host data (what ``check._expected_from_kernel`` reads)."""

    def __init__(self, sets: Any, host: dict[str, np.ndarray]) -> None:
        self.n, self.scalars, self.host = sets.n, sets.scalars, host


class SampledCheck:
    """The sampled output check of one configuration's timed run (module docstring) of ``target``
    (``check.CheckTarget``: the kernel on the run's own sets): a hook of its ``TimingOptions``;
    ``take()`` gives its flag (at most one line) after the run."""

    def __init__(self, target: CheckTarget, *, limit: int, fresh: Fresh | None = None, config: str = "") -> None:
        spec, sets = target.spec, target.sets
        self.device, self.spec, self.sets, self.kernel = target.device, spec, sets, target.kernel
        self.grid, self.block, self.limit = target.grid, target.block, int(limit)
        self.fresh, self.config = fresh, config or f"kernel {spec.name!r} at n={getattr(sets, 'n', '?')}"
        self.points = points(self.limit)
        self.done: set[int] = set()
        self.failures: list[str] = []
        self.checks = 0

    # -- the hook ----------------------------------------------------------------------------------
    def before_chunk(self, chunk: int, launched: int) -> None:
        if chunk in self.points and chunk not in self.done:
            self.done.add(chunk)
            self._check(chunk, launched)

    def after_run(self, chunks: int, launched: int) -> None:
        if self.limit > 0:
            self._check(chunks, launched)

    def take(self) -> list[str]:
        if not self.failures:
            return []
        first = self.failures[0]
        return [
            flag(
                f"{len(self.failures)} of {self.checks} output checks of launches sampled across the run failed; "
                f"the first, {first}"
            )
        ]

    # -- one check ---------------------------------------------------------------------------------
    def _check(self, chunk: int, launched: int) -> None:
        self.checks += 1
        index = (self.checks - 1) % len(self.sets.args)  # the run's sets in turn
        where = f"after {launched} timed launch(es), on buffer set {index}"
        try:
            if self.spec.call is not None:
                self._callable(index)
            else:
                self._kernel(index)
        except BenchmarkError as exc:
            self.failures.append(f"{where}: {exc}")

    def _callable(self, index: int) -> None:
        from .callable import check_callable

        check_callable(self.device, self.spec, self.sets, config=self.config, index=index)

    def _kernel(self, index: int) -> None:
        dev, spec, sets = self.device, self.spec, self.sets
        bufs = sets.buffers[index]
        pristine = sets.pristine
        has_ref = spec.reference is not None or spec.check_kernel is not None
        host, expected = self.fresh.get(sets) if (has_ref and self.fresh is not None) else (pristine, None)
        outs = [a for a in spec.buffers() if a.role in ("out", "inout")]
        got = self._launch(index, host, 0)
        try:
            if expected is not None:
                for name, ref in expected.items():
                    if name in got:
                        self._compare(name, got[name], np.asarray(ref))
                return
            suspects = {a.name: _holds(got[a.name], POISON[_floating(a.dtype)][0]) for a in outs if a.role == "out"}
            suspects = {k: m for k, m in suspects.items() if m.any()}
            if suspects:
                again = self._launch(index, host, 1)
                for a in outs:
                    if a.name in suspects:
                        left = suspects[a.name] & _holds(again[a.name], POISON[_floating(a.dtype)][1])
                        if left.any():
                            raise BenchmarkError(
                                f"output check failed for {self.config}: {int(left.sum())} of {left.size} "
                                f"elements of {a.name!r} were left unwritten (the poison put there before the "
                                f"launch; the first at index {int(np.argmax(left))})"
                            )
        finally:
            for a in spec.buffers():  # the run's data back, for the timed launches that follow
                dev.copy_to_device(bufs[a.name], pristine[a.name])
            dev.synchronize()

    def _compare(self, name: str, got: np.ndarray, ref: np.ndarray) -> None:
        """``check.compare`` on at most ``SAMPLE_ELEMENTS`` elements (seeded, spread over the output);
        where they disagree, on the whole output, which names the worst element. Why a sample: at 256
        MiB the whole comparison took a second per check, and a cheat that gains time leaves far more
        than one element in a million wrong."""
        from .check import compare

        config, spec = self.config + " (fresh inputs)", self.spec
        g, e = got.reshape(-1), ref.reshape(-1)
        if g.size > SAMPLE_ELEMENTS and g.size == e.size:
            pick = np.random.default_rng([0x51, g.size]).integers(0, g.size, SAMPLE_ELEMENTS)
            try:
                compare(config, name, g[pick], e[pick], rtol=spec.check_rtol, atol=spec.check_atol)
                return
            except BenchmarkError:
                pass
        compare(config, name, got, ref, rtol=spec.check_rtol, atol=spec.check_atol)

    def _launch(self, index: int, host: dict[str, np.ndarray], which: int) -> dict[str, np.ndarray]:
        """Set ``index`` loaded with ``host``'s inputs and the poison ``which`` in its outputs, the
        kernel launched once, the outputs read back (as integers of their width: the poison's bits)."""
        dev, spec = self.device, self.spec
        bufs = self.sets.buffers[index]
        for a in spec.buffers():
            if a.role == "out":
                dev.memset(bufs[a.name], POISON[_floating(a.dtype)][which])
            else:
                dev.copy_to_device(bufs[a.name], host[a.name])
        dev.synchronize()
        dev.launch(self.kernel, self.grid, self.block, self.sets.args[index])
        dev.synchronize()
        got = {}
        for a in spec.buffers():
            if a.role in ("out", "inout"):
                arr = np.empty_like(host[a.name])
                dev.copy_to_host(bufs[a.name], arr)
                got[a.name] = arr
        return got


__all__ = ["BASE", "Fresh", "POISON", "SampledCheck", "fresh_inputs", "points"]
