"""The output check before timing: the declared roles, then the reference, once per (kernel, size).

Why before any timing, and why apart from the unit (``bench.sweeprun``): a wrong kernel's times
answer nothing, so each (kernel, size) is checked before its first timed launch, in a sweep's first
unit (correctness does not move with placement). The check itself (``verify``) is the roles' rule
(``bench.roles``) and the element-wise comparison (``bench.check``, a callable's ``bench.callable``);
``check_before_timing`` adds the one rule that needs the process's memory: code that passed its
check earlier in this process and fails it now keeps state between launches (a host .so's statics,
a module's device globals), which is a trust flag on its rows (``bench.trust``), not an error.
"""

from __future__ import annotations

import math
from typing import Any

from ..devices.base import BoundKernel
from ..errors import BenchmarkError, ConfigError
from ..readable import format_bytes
from . import roles
from .callable import check_callable
from .check import POISONED, CheckTarget, check_outputs
from .target import Target
from .trust import StatefulKernel, flag


def verify(target: CheckTarget, rtol: float | None = None, *, config: str = "", where: str = "") -> float:
    """The output check of ``target`` (``check.CheckTarget``: the kernel on its sets, with its
    geometry): first the role check (``bench.roles``: an ``in`` never written, every ``out`` element
    written, an ``inout`` changed; a ``ConfigError`` naming the argument), then (``bench.check``) one
    launch on set 0 with poisoned outputs, compared element by element with the reference (NumPy
    function, second kernel, or a callable's reference).

    Returns the largest ||out - ref|| / ||ref||; raises ``BenchmarkError`` naming the configuration
    and the worst element. Kernels without a reference return NaN (nothing to compare).
    """
    device, spec, sets = target.device, target.spec, target.sets
    if spec.call is not None:
        return check_callable(device, spec, sets, config=config or f"callable {spec.name!r} at n={sets.n}")
    later = ""
    applies = roles.applies(spec)
    if applies:  # unwritten outputs of a kernel with a reference: its check names the worst element first
        later = roles.check_roles(
            device,
            spec,
            sets,
            target.kernel,
            target.grid,
            target.block,
            where=where or f"n={sets.n}",
            defer_unwritten=spec.reference is not None or spec.check_kernel is not None,
        )
    try:
        err = check_outputs(target, config=config, rtol=rtol)
    except BenchmarkError as exc:
        if applies and not later and POISONED in str(exc):  # launch 1 wrote every output, launch 2 left some
            raise StatefulKernel(
                f"its first launch (the role check) wrote every output and its second left some unwritten: {exc}"
            ) from None
        raise
    if later:
        raise ConfigError(later)
    return err


#: the loaded code whose output check passed in this process (by ``id``, the object kept so the id
#: stays its own): that code failing a later check kept state between launches (a host .so's statics,
#: a module's device globals). Code built anew (an edited source or header) is another object.
_CHECKED: dict[int, Any] = {}


def code_of(kernel: Any) -> Any:
    """The loaded function under a ``BoundKernel``."""
    return kernel.function if isinstance(kernel, BoundKernel) else kernel


def check_before_timing(device: Any, t: Target, sets: Any) -> float:
    """``verify`` of ``t``'s events variant on ``sets`` (one set): its error; NaN with a trust flag
    on ``t`` when code that passed before in this process fails now (module docstring). A kernel
    wrong from its first launch raises, as ``verify`` does."""
    try:
        err = verify(
            CheckTarget(device, t.kspec, sets, t.plain, t.grid, t.block),
            where=f"size {format_bytes(t.size)} (n={t.n})",
            config=f"kernel {t.kspec.name} size={t.size} (n={t.n}, grid={t.grid}, block={t.block}, shared={t.shared})",
        )
    except (BenchmarkError, ConfigError) as exc:
        if id(code_of(t.plain)) not in _CHECKED and not isinstance(exc, StatefulKernel):
            raise  # wrong from its first launch: a broken kernel, an error
        # right before, wrong after its own launches: it keeps state between launches
        t.flags.append(
            flag(
                f"the output check before timing failed, though this kernel passed it earlier in the same process: {exc}"
            )
        )
        err = math.nan
    _CHECKED.setdefault(id(code_of(t.plain)), code_of(t.plain))
    return err


__all__ = ["check_before_timing", "code_of", "verify"]
