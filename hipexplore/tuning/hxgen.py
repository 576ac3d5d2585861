"""Generated kernels of the real-model tuning lists: a templated GEMM with a fused epilogue, and
MIGraphX-style pointwise and fill kernels, over a header-heavy device library.

Why generated, and why a library: MIGraphX compiles a few lines of generated source per kernel
(``pointwise_kernel`` calling ``pointwise(...)`` on ``make_tensors()``), and what costs the time
is the kernel library every such source includes (index, shape, tensor_view, vectorize, math, the
low-precision types, ...): its headers travel with every compile. Our ``hx`` library
(``tuning/src/hx_*.hpp``, passed to the compiler as ``headers=`` so their text is in every key)
is that library in miniature; the generated sources here are MIGraphX's shape: shapes baked in as
template arguments, the pointwise op a generated functor, the output the last argument.

Kernels per tuning candidate (``roles``), as MIGraphX issues them for split-K with rocMLIR:
``split == 1``: one GEMM with the epilogue fused; ``split > 1``: a ``fill`` zeroing the output, the
GEMM adding each K slice into it atomically, and the ``pointwise`` tail applying the epilogue
(no tail when the epilogue is ``none``). Fill and tail depend only on the problem (M, N, epilogue),
so they repeat across every split-K candidate of a problem, and across problems of equal output.

Compilers: hiprtc and NVRTC compile the same C++ text (``-std=c++17``); the host C compiler
compiles C twins (``tuning/src/hxh_*.c``: same arguments and arithmetic, loops instead of
threads); Triton compiles ``tuning/src/triton_models.py`` (the epilogue a constexpr).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from ..compile.request import COMPILERS, CompileRequest, Source
from ..errors import ConfigError
from ..untrusted import check_name, shown

#: include name -> file under tuning/src (the order is the library's dependency order)
PRELUDE_FILES: dict[str, str] = {
    "hx/kernels/config.hpp": "hx_config.hpp",
    "hx/kernels/types.hpp": "hx_types.hpp",
    "hx/kernels/type_traits.hpp": "hx_type_traits.hpp",
    "hx/kernels/functional.hpp": "hx_functional.hpp",
    "hx/kernels/array.hpp": "hx_array.hpp",
    "hx/kernels/tuple.hpp": "hx_tuple.hpp",
    "hx/kernels/lowp.hpp": "hx_lowp.hpp",
    "hx/kernels/vec.hpp": "hx_vec.hpp",
    "hx/kernels/math.hpp": "hx_math.hpp",
    "hx/kernels/shape.hpp": "hx_shape.hpp",
    "hx/kernels/tensor_view.hpp": "hx_tensor_view.hpp",
    "hx/kernels/index.hpp": "hx_index.hpp",
    "hx/kernels/ops.hpp": "hx_ops.hpp",
    "hx/kernels/algorithm.hpp": "hx_algorithm.hpp",
    "hx/kernels/reduce.hpp": "hx_reduce.hpp",
    "hx/kernels/pointwise.hpp": "hx_pointwise.hpp",
    "hx/kernels/gemm.hpp": "hx_gemm.hpp",
}

#: The fused tails: name -> (extra inputs, C++ expression of x0 = the GEMM result and x1, x2 = the
#: extra inputs, in order). "col" is a bias per output column (broadcast over rows), "elem" an
#: M x N tensor (a residual, or the other GEMM's output for SwiGLU's product).
EPILOGUES: dict[str, tuple[tuple[str, ...], str]] = {
    "none": ((), "x0"),
    "bias": (("col",), "x0 + x1"),
    "bias_relu": (("col",), "relu(x0 + x1)"),
    "bias_gelu": (("col",), "gelu_erf(x0 + x1)"),
    "add": (("elem",), "x0 + x1"),
    "bias_add_relu": (("col", "elem"), "relu(x0 + x1 + x2)"),
    "silu": ((), "silu(x0)"),
    "mul": (("elem",), "x0 * x1"),
}

#: Triton's spelling of each epilogue (tuning/src/triton_models.py switches on it)
EPILOGUE_CODES = {name: i for i, name in enumerate(EPILOGUES)}

ROLES = ("fill", "gemm", "pointwise")
#: NVRTC 13.0 treats the lambdas of device code as host functions unless unannotated code defaults to
#: device code (13.5 does not need it; the meaning is the same for these all-device sources)
OPTIONS = {"hiprtc": ("-std=c++17",), "nvrtc": ("-std=c++17", "-default-device"), "host": (), "triton": ()}
_EXT = {"hiprtc": ".hip", "nvrtc": ".cu", "host": ".c"}
SYMBOLS = {"fill": "hx_fill", "gemm": "hx_gemm", "pointwise": "hx_pointwise"}
#: threads per block of the fill and pointwise kernels, and their vector width
TAIL_THREADS = 256
TAIL_VEC = 4
_SHARED_LIMIT = 48 * 1024
#: the largest split-K factor a perf config may name: far above what tuners try (the shipped lists go
#: to 8), and a bound where a list file could otherwise say 10**30
MAX_SPLIT = 256
#: digits of one perf-config field (every other field is bounded by the thread count and shared memory)
_FIELD_DIGITS = 6


def _pos(name: str, v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ConfigError(f"{name} must be a positive integer; got {v!r}")
    return v


@dataclass(frozen=True)
class PerfConfig:
    """One tuning candidate, in the spirit of MIGraphX/rocMLIR perf configs: block tile
    bm x bn x bk, per-thread register tile tm x tn, vector width of the global loads, split-K
    factor and unroll factor of the inner k loop. ``perf_config`` is its string form."""

    bm: int
    bn: int
    bk: int
    tm: int
    tn: int
    vec: int = 4
    split: int = 1
    unroll: int = 4

    def __post_init__(self) -> None:
        for f in ("bm", "bn", "bk", "tm", "tn", "vec", "split", "unroll"):
            _pos(f"config {f}", getattr(self, f))
        if self.split > MAX_SPLIT:
            raise ConfigError(
                f"config {self.perf_config}: split {self.split} is more than {MAX_SPLIT}; expected a "
                f"split-K factor in 1..{MAX_SPLIT}"
            )
        if self.bm % self.tm or self.bn % self.tn:
            raise ConfigError(
                f"config {self.perf_config}: the thread tile {self.tm}x{self.tn} must divide the block tile "
                f"{self.bm}x{self.bn}"
            )
        if not 32 <= self.threads <= 1024:
            raise ConfigError(
                f"config {self.perf_config}: (bm/tm)*(bn/tn) = {self.threads} threads per block; expected 32..1024"
            )
        if self.vec not in (1, 2, 4):
            raise ConfigError(f"config {self.perf_config}: vec must be 1, 2 or 4; got {self.vec}")
        if self.shared_bytes > _SHARED_LIMIT:
            raise ConfigError(
                f"config {self.perf_config}: the tiles need {self.shared_bytes} bytes of shared memory; "
                f"at most {_SHARED_LIMIT}"
            )
        if self.unroll > self.bk:
            raise ConfigError(f"config {self.perf_config}: unroll {self.unroll} is more than bk {self.bk}")

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)

    @property
    def shared_bytes(self) -> int:
        return 4 * self.bk * ((self.bm + 1) + self.bn)

    @property
    def perf_config(self) -> str:
        return f"v1:{self.bm},{self.bn},{self.bk},{self.tm},{self.tn},{self.vec},{self.split},{self.unroll}"

    @property
    def name(self) -> str:
        return f"t{self.bm}x{self.bn}x{self.bk}_r{self.tm}x{self.tn}_v{self.vec}_s{self.split}_u{self.unroll}"

    @classmethod
    def parse(cls, text: str) -> "PerfConfig":
        m = re.fullmatch(r"v1:(\d+(?:,\d+){7})", text.strip()) if isinstance(text, str) and len(text) < 200 else None
        if not m:
            raise ConfigError(
                f"perf config must look like 'v1:BM,BN,BK,TM,TN,VEC,SPLIT,UNROLL' "
                f"(e.g. 'v1:64,64,16,4,4,4,2,4'); got {shown(text)}"
            )
        fields = m.group(1).split(",")
        long = next((x for x in fields if len(x) > _FIELD_DIGITS), None)
        if long is not None:  # before int(): 4,300 digits and more raise a ValueError of their own
            raise ConfigError(
                f"perf config {shown(text)}: a field of {len(long)} digits; expected at most "
                f"{_FIELD_DIGITS} digits per field"
            )
        return cls(*(int(x) for x in fields))

    # Triton's view of the candidate: the block tile, split-K, warps from the thread count and
    # software-pipelining stages from the unroll (a full unroll of bk pipelines deeper)
    @property
    def num_warps(self) -> int:
        return max(1, min(8, self.threads // 32))

    @property
    def num_stages(self) -> int:
        return 3 if self.unroll >= self.bk else 2


@dataclass(frozen=True)
class Problem:
    """One GEMM of a model (``epilogue(A @ B, extra inputs)``), M x N x K, fp32."""

    name: str
    m: int
    n: int
    k: int
    epilogue: str = "none"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or "/" in self.name or self.name != self.name.strip():
            raise ConfigError(
                f"problem name must be a non-empty string without '/' or surrounding spaces; got {shown(self.name)}"
            )
        check_name(self.name, "problem name")  # it labels every entry and event, and is printed
        for f in ("m", "n", "k"):
            _pos(f"problem {self.name!r} {f}", getattr(self, f))
            if getattr(self, f) > 1 << 24:
                raise ConfigError(f"problem {self.name!r}: {f}={getattr(self, f)} is more than 2^24")
        if self.m * self.n > 1 << 31 or self.m * self.k > 1 << 31 or self.k * self.n > 1 << 31:
            raise ConfigError(
                f"problem {self.name!r}: {self.m}x{self.n}x{self.k} has a matrix of more than 2^31 elements "
                f"(32-bit indices)"
            )
        if self.epilogue not in EPILOGUES:
            raise ConfigError(
                f"problem {self.name!r}: epilogue must be one of {', '.join(EPILOGUES)}; got {self.epilogue!r}"
            )

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.m, self.n, self.k)


def roles(problem: Problem, config: PerfConfig) -> tuple[str, ...]:
    """The kernels one candidate compiles, in launch order."""
    if config.split == 1:
        return ("gemm",)
    return ("fill", "gemm") if problem.epilogue == "none" else ROLES


def kernel_key(role: str, problem: Problem, config: PerfConfig) -> tuple:
    """What a role's kernel depends on (equal keys: equal requests, on every backend): the fill
    only on M*N; the tail on M, N and the epilogue; the GEMM on the shape, the candidate and, when
    fused (split 1), the epilogue."""
    if role == "fill":
        return (role, problem.m * problem.n)
    if role == "pointwise":
        return (role, problem.m, problem.n, problem.epilogue)
    return (role, problem.shape, problem.epilogue if config.split == 1 else "", config)


# ----------------------------------------------------------------------------- sources
@lru_cache(maxsize=None)
def _text(name: str) -> str:
    return resources.files(__package__).joinpath("src", name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def prelude_headers() -> tuple[Source, ...]:
    """The device library, as the (name, text) headers of every GPU request."""
    return tuple(Source(inc, _text(fname)) for inc, fname in PRELUDE_FILES.items())


def prelude_bytes() -> int:
    return sum(len(h.text.encode()) for h in prelude_headers())


def _op_functor(epilogue: str) -> str:
    inputs, expr = EPILOGUES[epilogue]
    n = 1 + len(inputs)
    tparams = ", ".join(f"class T{i}" for i in range(n))
    params = ", ".join(f"T{i} x{i}" for i in range(n))
    return (
        f"struct hx_op_{epilogue} {{\n"
        f"    template <{tparams}>\n"
        f"    HX_INLINE auto operator()({params}) const {{ return {expr}; }}\n"
        f"}};\n"
    )


def gemm_source(problem: Problem, config: PerfConfig) -> str:
    """The generated GEMM: one instantiation of hx::gemm with this shape, tile and epilogue."""
    inputs, _ = EPILOGUES[problem.epilogue]
    fused = config.split == 1
    args = ["const float* __restrict__ a", "const float* __restrict__ b", "float* __restrict__ c"]
    extra = []
    if fused:
        for i, kind in enumerate(inputs):
            args.append(f"const float* __restrict__ e{i}")
            extra.append(f"hx::{'column_input' if kind == 'col' else 'element_input'}<{problem.n}>{{e{i}}}")
    cfg = config
    return (
        "#include <hx/kernels/gemm.hpp>\n"
        "#include <hx/kernels/math.hpp>\n\n"
        "namespace hx {\n"
        f"{_op_functor(problem.epilogue if fused else 'none')}\n"
        f"using hx_config = gemm_config<{cfg.bm}, {cfg.bn}, {cfg.bk}, {cfg.tm}, {cfg.tn}, {cfg.vec}, {cfg.split}, {cfg.unroll}>;\n"
        f"using hx_problem = gemm_problem<{problem.m}, {problem.n}, {problem.k}>;\n"
        "}  // namespace hx\n\n"
        f"HX_GLOBAL void __launch_bounds__({cfg.threads}) hx_gemm({', '.join(args)})\n"
        "{\n"
        "    using namespace hx;\n"
        f"    gemm<hx_config, hx_problem>(a, b, c, hx_op_{problem.epilogue if fused else 'none'}{{}}"
        f"{''.join(', ' + e for e in extra)});\n"
        "}\n"
    )


def pointwise_source(problem: Problem) -> str:
    """The generated tail: out = epilogue(gemm result, extra inputs), MIGraphX's layout (inputs
    first, the output last, rotated to the front by ``rotate_last``)."""
    inputs, _ = EPILOGUES[problem.epilogue]
    m, n = problem.m, problem.n
    shapes = [f"packed_shape<{m}, {n}>"]
    shapes += [f"broadcast_shape<1, {m}, {n}>" if k == "col" else f"packed_shape<{m}, {n}>" for k in inputs]
    shapes.append(f"packed_shape<{m}, {n}>")
    nargs = len(shapes)
    params = ", ".join(f"void* p{i}" for i in range(nargs))
    names = ", ".join(f"p{i}" for i in range(nargs))
    views = ", ".join(["auto y"] + [f"auto x{i}" for i in range(nargs - 1)])
    xs = ", ".join(f"x{i}" for i in range(nargs - 1))
    return (
        "#include <hx/kernels/index.hpp>\n"
        "#include <hx/kernels/pointwise.hpp>\n"
        "#include <hx/kernels/math.hpp>\n"
        "#include <hx/kernels/ops.hpp>\n\n"
        "namespace hx {\n"
        f"{_op_functor(problem.epilogue)}"
        "}  // namespace hx\n\n"
        f"HX_GLOBAL void __launch_bounds__({TAIL_THREADS}) hx_pointwise({params})\n"
        "{\n"
        "    using namespace hx;\n"
        f"    transform_args(make_tensors<float, {', '.join(shapes)}>(), rotate_last())({names})([]({views}) {{\n"
        f"        pointwise<{TAIL_VEC}>(make_index(), hx_op_{problem.epilogue}{{}}, y, {xs});\n"
        "    });\n"
        "}\n"
    )


def fill_source(problem: Problem) -> str:
    """The generated zero fill of the M x N output (MIGraphX's fill before a split-K GEMM), as
    M*N contiguous elements: one fill serves every output of that size, on every backend."""
    return (
        "#include <hx/kernels/index.hpp>\n"
        "#include <hx/kernels/pointwise.hpp>\n\n"
        f"HX_GLOBAL void __launch_bounds__({TAIL_THREADS}) hx_fill(void* p0)\n"
        "{\n"
        "    using namespace hx;\n"
        f"    make_tensors<float, packed_shape<{problem.m * problem.n}>>()(p0)([](auto y) {{\n"
        f"        fill<{TAIL_VEC}>(make_index(), y, 0.0f);\n"
        "    });\n"
        "}\n"
    )


_HOST_EPI = {"none": 0, "bias": 1, "bias_relu": 2, "bias_gelu": 3, "add": 4, "bias_add_relu": 5, "silu": 6, "mul": 7}


def host_defines(role: str, problem: Problem, config: PerfConfig) -> dict[str, int]:
    """The -D parameters of the host C twins (same shapes, tiles and epilogue as the GPU text)."""
    epi = _HOST_EPI[problem.epilogue]
    if role == "gemm":
        return {
            "GEMM_M": problem.m,
            "GEMM_N": problem.n,
            "GEMM_K": problem.k,
            "BM": config.bm,
            "BN": config.bn,
            "BK": config.bk,
            "SPLIT": config.split,
            "UNROLL": config.unroll,
            "EPI": epi if config.split == 1 else 0,
        }
    if role == "fill":
        return {"FILL_N": problem.m * problem.n}
    if role == "pointwise":
        return {"PW_M": problem.m, "PW_N": problem.n, "EPI": epi}
    raise ConfigError(f"role must be one of {', '.join(ROLES)}; got {role!r}")


@lru_cache(maxsize=None)
def triton_file() -> str:
    return str(resources.files(__package__).joinpath("src", "triton_models.py"))


def triton_parts(role: str, problem: Problem, config: PerfConfig) -> tuple[str, str, dict, dict]:
    """(kernel, signature, constexprs, options) of a role's Triton request."""
    m, n, k = problem.shape
    code = EPILOGUE_CODES[problem.epilogue]
    if role == "gemm":
        fused = config.split == 1
        sig = "a_ptr:*fp32,b_ptr:*fp32,c_ptr:*fp32,e0_ptr:*fp32,e1_ptr:*fp32"
        consts = {
            "M": m,
            "N": n,
            "K": k,
            "BLOCK_M": max(16, config.bm),
            "BLOCK_N": max(16, config.bn),
            "BLOCK_K": max(16, config.bk),
            "SPLIT_K": config.split,
            "EPI": code if fused else 0,
        }
        return "matmul_fused", sig, consts, {"num_warps": config.num_warps, "num_stages": config.num_stages}
    if role == "fill":
        return "fill_zero", "c_ptr:*fp32", {"N": m * n, "BLOCK": 1024}, {"num_warps": 4}
    if role == "pointwise":
        sig = "x_ptr:*fp32,e0_ptr:*fp32,e1_ptr:*fp32,y_ptr:*fp32"
        return "pointwise_epilogue", sig, {"M": m, "N": n, "EPI": code, "BLOCK": 1024}, {"num_warps": 4}
    raise ConfigError(f"role must be one of {', '.join(ROLES)}; got {role!r}")


def request(
    role: str, compiler: str, target: str, problem: Problem, config: PerfConfig, label: str = ""
) -> CompileRequest:
    """The compile request of one role of one candidate (``label`` names it in events only)."""
    if compiler not in COMPILERS:
        raise ConfigError(f"compiler must be one of {', '.join(COMPILERS)}; got {compiler!r}")
    if role not in ROLES:
        raise ConfigError(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    if compiler == "triton":
        from ..compile.triton_source import triton_request

        kernel, sig, consts, opts = triton_parts(role, problem, config)
        return triton_request(triton_file(), kernel, sig, target, consts, opts, label=label)
    if compiler == "host":
        text = _text(f"hxh_{role}.c")
        opts = tuple(f"-D{k}={v}" for k, v in host_defines(role, problem, config).items())
        headers = (Source("hxh_epilogue.h", _text("hxh_epilogue.h")),) if role != "fill" else ()
        return CompileRequest(
            Source(f"hxh_{role}.c", text),
            "host",
            target,
            headers=headers,
            kernels=(SYMBOLS[role],),
            options=opts,
            label=label,
        )
    text = {"gemm": gemm_source, "pointwise": pointwise_source, "fill": fill_source}[role](
        *((problem, config) if role == "gemm" else (problem,))
    )
    return CompileRequest(
        Source(SYMBOLS[role] + _EXT[compiler], text),
        compiler,
        target,
        headers=prelude_headers(),
        kernels=(SYMBOLS[role],),
        options=OPTIONS[compiler],
        label=label,
    )


def launch(
    role: str, problem: Problem, config: PerfConfig, sm_count: int
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(grid, block) of a role on a GPU (the kernels never need more than that to run); ``sm_count``
    is the device's own (``device.compute_units``), never one GPU's number standing in for all."""
    sm_count = _pos("sm_count (the device's compute units)", sm_count)
    if role == "gemm":
        return ((-(-problem.n // config.bn), -(-problem.m // config.bm), config.split), (config.threads, 1, 1))
    n = problem.m * problem.n // (TAIL_VEC if problem.n % TAIL_VEC == 0 else 1)
    return ((max(1, min(-(-n // TAIL_THREADS), 8 * sm_count)), 1, 1), (TAIL_THREADS, 1, 1))


def kernel_arguments(role: str, problem: Problem, config: PerfConfig) -> tuple[str, ...]:
    """Names of a role's pointer arguments in order: a, b (inputs), c (output), e0/e1 (extra
    epilogue inputs: bias, residual), y (the tail's output); a tool that launches the kernels
    binds buffers by these names."""
    inputs, _ = EPILOGUES[problem.epilogue]
    if role == "gemm":
        return ("a", "b", "c", *(f"e{i}" for i in range(len(inputs) if config.split == 1 else 0)))
    if role == "fill":
        return ("c",)
    return ("c", *(f"e{i}" for i in range(len(inputs))), "y")


__all__ = [
    "EPILOGUES",
    "PRELUDE_FILES",
    "PerfConfig",
    "Problem",
    "ROLES",
    "fill_source",
    "gemm_source",
    "kernel_arguments",
    "launch",
    "pointwise_source",
    "prelude_headers",
    "request",
    "roles",
    "triton_parts",
]
