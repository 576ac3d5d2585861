"""The split-K GEMM family used by tuning lists: a tiled GEMM plus its fill, reduce and pointwise tail.

Why a family: in MIGraphX split-K tuning every candidate is a GEMM kernel *plus* a zero fill, a
pointwise tail (bias + activation) and, when K is split, a reduction. The tails do not depend on the
tile configuration, so they are identical across candidates; recompiling them per candidate is what
the MIGraphX compile cache (PR 5270) removed. This module builds the four kinds of compile request
from one GPU source per role (the same text for hiprtc and NVRTC) and one host C twin per role, all
parameterized at compile time with ``-D`` options, and runs the host pipeline through ctypes so its
results can be checked against numpy.
"""

from __future__ import annotations

import ctypes
import math
import os
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Mapping, Sequence

import numpy as np

from ..compile.request import COMPILERS, CompileRequest, Source
from ..errors import ConfigError, DeviceError

#: The roles of the kernels that make one tuning candidate, in launch order.
ROLES = ("fill", "gemm", "reduce", "pointwise")

#: Activation of the pointwise tail -> the ``ACT`` value the sources switch on.
ACTIVATIONS = {"none": 0, "relu": 1, "gelu": 2}

#: role -> (source file stem, exported symbol)
_ROLE_FILES = {
    "gemm": "gemm_tile",
    "fill": "gemm_fill",
    "reduce": "gemm_reduce",
    "pointwise": "gemm_pointwise",
}

#: GPU source extension per compiler: one text, named as each compiler expects.
_EXT = {"hiprtc": ".hip", "nvrtc": ".cu", "host": ".c"}

#: Threads per block of the elementwise kernels (fill, reduce, pointwise).
ELEMENTWISE_THREADS = 256

#: Static shared memory a block may use without opting in, on both vendors.
_SHARED_LIMIT = 48 * 1024


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < 1:
        raise ConfigError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


@dataclass(frozen=True)
class GemmShape:
    """A GEMM problem's sizes: C[m, n] = A[m, k] @ B[k, n] (fp32, row-major)."""

    m: int
    n: int
    k: int

    def __post_init__(self) -> None:
        for attr in ("m", "n", "k"):
            object.__setattr__(self, attr, _positive_int(f"GemmShape.{attr}", getattr(self, attr)))


@dataclass(frozen=True)
class GemmConfig:
    """One tuning candidate's compile-time parameters.

    bm x bn x bk: block tile; tm x tn: each thread's register tile (so a block has
    (bm/tm)*(bn/tn) threads); split: K slices (split-K); unroll: unroll factor of the inner k loop.
    """

    bm: int = 64
    bn: int = 64
    bk: int = 16
    tm: int = 4
    tn: int = 4
    split: int = 1
    unroll: int = 4

    def __post_init__(self) -> None:
        for attr in ("bm", "bn", "bk", "tm", "tn", "split", "unroll"):
            object.__setattr__(self, attr, _positive_int(f"GemmConfig.{attr}", getattr(self, attr)))
        if self.bm % self.tm or self.bn % self.tn:
            raise ConfigError(
                f"the thread tile must divide the block tile: bm={self.bm} % tm={self.tm} and "
                f"bn={self.bn} % tn={self.tn} must both be 0"
            )
        if not 1 <= self.threads <= 1024:
            raise ConfigError(f"(bm/tm)*(bn/tn) = {self.threads} threads per block; expected 1..1024")
        if self.shared_bytes > _SHARED_LIMIT:
            raise ConfigError(
                f"tile {self.bm}x{self.bn}x{self.bk} needs {self.shared_bytes} bytes of shared memory; "
                f"at most {_SHARED_LIMIT} expected"
            )

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)

    @property
    def shared_bytes(self) -> int:
        return 4 * self.bk * ((self.bm + 1) + self.bn)

    @property
    def name(self) -> str:
        """A short, stable name such as ``t64x64x16_r4x4_s2_u4``."""
        return f"t{self.bm}x{self.bn}x{self.bk}_r{self.tm}x{self.tn}_s{self.split}_u{self.unroll}"

    def k_chunk(self, k: int) -> int:
        """K extent of each slice (the last one may be shorter, or empty when split > k)."""
        return -(-k // self.split)


def _check_activation(activation: str) -> int:
    if activation not in ACTIVATIONS:
        raise ConfigError(f"activation must be one of {', '.join(ACTIVATIONS)}; got {activation!r}")
    return ACTIVATIONS[activation]


def roles_for(config: GemmConfig) -> tuple[str, ...]:
    """The kernels one candidate needs, in launch order (no reduction without split-K)."""
    return ROLES if config.split > 1 else tuple(r for r in ROLES if r != "reduce")


def defines(role: str, shape: GemmShape, config: GemmConfig, activation: str = "none") -> dict[str, int]:
    """The compile-time parameters of one role. Only what the kernel's code depends on enters,
    so the tails of candidates that differ only in tiles get identical requests (and keys)."""
    act = _check_activation(activation)
    if role == "gemm":
        return {
            "GEMM_M": shape.m,
            "GEMM_N": shape.n,
            "GEMM_K": shape.k,
            "BM": config.bm,
            "BN": config.bn,
            "BK": config.bk,
            "TM": config.tm,
            "TN": config.tn,
            "SPLIT": config.split,
            "UNROLL": config.unroll,
        }
    if role == "fill":
        return {"FILL_N": config.split * shape.m * shape.n}
    if role == "reduce":
        if config.split < 2:
            raise ConfigError(f"the reduce kernel exists only for split > 1; got split={config.split}")
        return {"RED_MN": shape.m * shape.n, "SPLIT": config.split}
    if role == "pointwise":
        return {"PW_M": shape.m, "PW_N": shape.n, "ACT": act}
    raise ConfigError(f"role must be one of {', '.join(ROLES)}; got {role!r}")


@lru_cache(maxsize=None)
def source_text(role: str, dialect: str) -> str:
    """The kernel source of a role: ``dialect`` "gpu" (hiprtc and NVRTC share it) or "host" (C)."""
    if role not in _ROLE_FILES:
        raise ConfigError(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    if dialect not in ("gpu", "host"):
        raise ConfigError(f"dialect must be 'gpu' or 'host'; got {dialect!r}")
    fname = _ROLE_FILES[role] + (".cu" if dialect == "gpu" else ".c")
    return resources.files(__package__).joinpath("src", fname).read_text(encoding="utf-8")


def symbol(role: str) -> str:
    """The exported (``extern "C"``) symbol of a role's kernel."""
    if role not in _ROLE_FILES:
        raise ConfigError(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    return _ROLE_FILES[role]


#: Extra options per compiler (none today: each backend picks its own optimization level).
_BASE_OPTIONS: dict[str, tuple[str, ...]] = {"hiprtc": (), "nvrtc": (), "host": ()}


def kernel_request(
    role: str,
    compiler: str,
    target: str,
    shape: GemmShape,
    config: GemmConfig,
    activation: str = "none",
    label: str = "",
    extra_options: Sequence[str] = (),
) -> CompileRequest:
    """The compile request of one role of one candidate (``label`` is for events only)."""
    if compiler not in COMPILERS:
        raise ConfigError(f"compiler must be one of {', '.join(COMPILERS)}; got {compiler!r}")
    params = defines(role, shape, config, activation)
    options = (*_BASE_OPTIONS[compiler], *(f"-D{k}={v}" for k, v in params.items()), *extra_options)
    dialect = "host" if compiler == "host" else "gpu"
    source = Source(_ROLE_FILES[role] + _EXT[compiler], source_text(role, dialect))
    return CompileRequest(
        source=source,
        compiler=compiler,
        target=target,
        kernels=(symbol(role),),
        options=options,
        label=label,
    )


@dataclass(frozen=True)
class Launch:
    """Grid and block of one GPU launch (x, y, z)."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]


def launch_geometry(role: str, shape: GemmShape, config: GemmConfig, sm_count: int) -> Launch:
    """How to launch a role on a GPU: the GEMM has one block per output tile and K slice; the
    elementwise kernels use a grid-stride loop, capped at a few blocks per multiprocessor.
    ``sm_count`` is the device's own (``device.compute_units``): no default, since one GPU's
    count silently sizes another's grid."""
    sm_count = _positive_int("sm_count (the device's compute units)", sm_count)
    if role == "gemm":
        return Launch(
            (math.ceil(shape.n / config.bn), math.ceil(shape.m / config.bm), config.split),
            (config.threads, 1, 1),
        )
    n = {"fill": config.split * shape.m * shape.n, "reduce": shape.m * shape.n, "pointwise": shape.m * shape.n}.get(
        role
    )
    if n is None:
        raise ConfigError(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    blocks = max(1, min(math.ceil(n / ELEMENTWISE_THREADS), 8 * sm_count))
    return Launch((blocks, 1, 1), (ELEMENTWISE_THREADS, 1, 1))


def workspace_elements(shape: GemmShape, config: GemmConfig) -> int:
    """Floats the GEMM writes into: the output itself, or split x M x N partial sums."""
    return config.split * shape.m * shape.n


def reference(a: np.ndarray, b: np.ndarray, bias: np.ndarray, activation: str = "none") -> np.ndarray:
    """What the pipeline computes, in float64: act(a @ b + bias)."""
    _check_activation(activation)
    v = a.astype(np.float64) @ b.astype(np.float64) + bias.astype(np.float64)[None, :]
    if activation == "relu":
        v = np.maximum(v, 0.0)
    elif activation == "gelu":
        v = 0.5 * v * (1.0 + np.tanh(0.7978845608 * (v + 0.044715 * v**3)))
    return v


def relative_error(out: np.ndarray, ref: np.ndarray) -> float:
    """‖out − ref‖ / ‖ref‖ in float64; inf when out holds NaN (a NaN must never pass)."""
    out64 = out.astype(np.float64)
    if not np.all(np.isfinite(out64)):
        return math.inf
    denom = float(np.linalg.norm(ref))
    return float(np.linalg.norm(out64 - ref)) / (denom if denom > 0 else 1.0)


def random_inputs(shape: GemmShape, seed: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fresh fp32 inputs in [-1, 1) (never zeros: they hide unwritten outputs)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (shape.m, shape.k)).astype(np.float32)
    b = rng.uniform(-1, 1, (shape.k, shape.n)).astype(np.float32)
    bias = rng.uniform(-1, 1, shape.n).astype(np.float32)
    return a, b, bias


class HostKernels:
    """The host shared libraries of one candidate, loaded with ctypes (each from a private file,
    so identical symbol names in different libraries never clash)."""

    def __init__(self, binaries: Mapping[str, bytes]) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="hipexplore-gemm-")
        self._libs: dict[str, ctypes.CDLL] = {}
        self._fns: dict[str, ctypes._CFuncPtr] = {}
        for role, blob in binaries.items():
            if role not in _ROLE_FILES:
                raise ConfigError(f"role must be one of {', '.join(ROLES)}; got {role!r}")
            if not isinstance(blob, (bytes, bytearray)) or not blob:
                raise ConfigError(
                    f"the {role} binary must be non-empty bytes (a host shared library); got "
                    f"{type(blob).__name__} of length {len(blob) if hasattr(blob, '__len__') else '?'}"
                )
            path = os.path.join(self._dir.name, f"{role}.so")
            with open(path, "wb") as fh:
                fh.write(blob)
            try:
                lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
                fn = getattr(lib, symbol(role))
            except (OSError, AttributeError) as exc:
                raise DeviceError(f"could not load the host {role} kernel {symbol(role)!r}: {exc}") from exc
            fn.restype = None
            self._libs[role] = lib
            self._fns[role] = fn

    def close(self) -> None:
        self._fns.clear()
        self._libs.clear()
        self._dir.cleanup()

    def __enter__(self) -> "HostKernels":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, role: str, *arrays: np.ndarray) -> None:
        if role not in self._fns:
            raise ConfigError(f"no {role!r} kernel was loaded; loaded: {sorted(self._fns)}")
        ptrs = []
        for arr in arrays:
            if arr.dtype != np.float32 or not arr.flags.c_contiguous:
                raise ConfigError(
                    f"host kernels take C-contiguous float32 arrays; got {arr.dtype}, contiguous={arr.flags.c_contiguous}"
                )
            ptrs.append(arr.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
        self._fns[role](*ptrs)


def run_host_pipeline(
    binaries: Mapping[str, bytes],
    shape: GemmShape,
    config: GemmConfig,
    a: np.ndarray,
    b: np.ndarray,
    bias: np.ndarray,
    poison: float = float("nan"),
) -> np.ndarray:
    """Run fill -> gemm -> (reduce) -> pointwise on the host; every buffer starts poisoned, so an
    element a kernel fails to write shows up as NaN in the result."""
    for name, arr, want in (("a", a, (shape.m, shape.k)), ("b", b, (shape.k, shape.n)), ("bias", bias, (shape.n,))):
        if arr.shape != want:
            raise ConfigError(f"{name} must have shape {want}; got {arr.shape}")
    need = set(roles_for(config))
    if not need <= set(binaries):
        raise ConfigError(f"missing host binaries for roles {sorted(need - set(binaries))}")
    a = np.ascontiguousarray(a, dtype=np.float32)
    b = np.ascontiguousarray(b, dtype=np.float32)
    bias = np.ascontiguousarray(bias, dtype=np.float32)
    work = np.full(workspace_elements(shape, config), poison, dtype=np.float32)
    out = np.full(shape.m * shape.n, poison, dtype=np.float32)
    with HostKernels({r: binaries[r] for r in need}) as k:
        k("fill", work)
        k("gemm", a, b, work)
        if config.split > 1:
            c = np.full(shape.m * shape.n, poison, dtype=np.float32)
            k("reduce", work, c)
        else:
            c = work
        k("pointwise", c, bias, out)
    return out.reshape(shape.m, shape.n)
