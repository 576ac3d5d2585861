"""The kernels of the real-model tuning lists (tuning/hxgen.py): the generated GPU text compiles
with hiprtc and NVRTC (ELF checked), the Triton twins compile, and (on a GPU) the generated CUDA
text computes what numpy computes. (The host C twins checked against numpy: test_hxrun.py.)"""

from __future__ import annotations

import pytest

from elfcheck import assert_amdgpu_code_object, assert_cubin
from hipexplore.errors import ConfigError
from hipexplore.tuning import hxgen as g
from hipexplore.tuning import hxrun
from tuning.test_gemm import assert_the_count_is_required


def _compiler(name: str):
    from conftest import require_compiler

    return require_compiler(name)


# ragged shapes (nothing divides), one aligned, K not a multiple of the vector width
SHAPES = [(33, 40, 70), (64, 64, 256), (5, 24, 37)]
CONFIGS = [g.PerfConfig(32, 32, 16, 2, 2, 4, 1, 4), g.PerfConfig(32, 32, 16, 2, 2, 4, 3, 16)]


@pytest.mark.parametrize("compiler,target", [("nvrtc", "sm_90"), ("hiprtc", "gfx90a")])
def test_generated_gpu_text_compiles(compiler, target):
    comp = _compiler(compiler)
    prob = g.Problem("p", 100, 96, 4096, "bias_add_relu")
    cfg = g.PerfConfig(64, 64, 16, 4, 4, 4, 2, 4)
    for role in g.roles(prob, cfg):
        req = g.request(role, compiler, target, prob, cfg)
        assert len(req.headers) == len(g.PRELUDE_FILES)  # the whole library travels with every kernel
        code = comp.compile(req)
        if compiler == "nvrtc":
            assert_cubin(code.binary, 90, g.SYMBOLS[role])
        else:
            assert_amdgpu_code_object(code.binary, target, g.SYMBOLS[role])
        assert code.symbol(g.SYMBOLS[role]) == g.SYMBOLS[role]  # extern "C": the name a launcher looks up
    fused = g.request("gemm", compiler, target, prob, g.PerfConfig(64, 64, 16, 4, 4, 4, 1, 4))
    assert "hx_op_bias_add_relu" in fused.source.text and comp.compile(fused).nbytes > 0


def test_triton_twins_compile():
    comp = _compiler("triton")
    prob = g.Problem("p", 64, 64, 2048, "bias_gelu")
    for cfg in (g.PerfConfig(32, 32, 32, 2, 2, 4, 1, 32), g.PerfConfig(32, 32, 32, 2, 2, 4, 2, 32)):
        for role in g.roles(prob, cfg):
            req = g.request(role, "triton", "gfx942", prob, cfg)
            code = comp.compile(req)
            assert_amdgpu_code_object(code.binary, "gfx942", req.kernels[0])


def test_tails_depend_only_on_the_problem():
    """The fill and the pointwise tail of every split-K candidate of a problem are one request;
    split-K GEMMs carry no epilogue, so two problems of one shape share them too; a fused GEMM
    does carry it."""
    a, b = g.Problem("a", 64, 256, 4096, "add"), g.Problem("b", 64, 256, 4096, "mul")
    c1, c2 = g.PerfConfig(64, 64, 16, 4, 4, 4, 2, 4), g.PerfConfig(32, 64, 16, 2, 4, 4, 4, 16)
    for comp, target in (("nvrtc", "sm_90"), ("host", "host"), ("triton", "sm_90")):
        req = lambda role, p, c: g.request(role, comp, target, p, c)  # noqa: E731
        assert req("fill", a, c1) == req("fill", a, c2) == req("fill", b, c1)
        assert req("pointwise", a, c1) == req("pointwise", a, c2) != req("pointwise", b, c1)
        assert req("gemm", a, c1) == req("gemm", b, c1) != req("gemm", a, c2)
        f1, f2 = g.PerfConfig(64, 64, 16, 4, 4, 4, 1, 4), g.PerfConfig(64, 64, 16, 4, 4, 4, 1, 4)
        assert req("gemm", a, f1) == req("gemm", a, f2) != req("gemm", b, f1)
        for role in ("fill", "gemm", "pointwise"):  # kernel_key says exactly that
            for p, q, x, y in ((a, b, c1, c2), (a, a, c1, c2), (a, b, f1, f1), (a, b, c1, c1)):
                if role not in g.roles(p, x) or role not in g.roles(q, y):
                    continue
                same_key = g.kernel_key(role, p, x) == g.kernel_key(role, q, y)
                assert same_key == (req(role, p, x) == req(role, q, y)), (comp, role, p, q, x, y)


@pytest.mark.parametrize(
    "text,match",
    [
        ("v1:64,64,16,4,4,4,2", "v1:BM,BN,BK"),
        ("v1:64,64,16,5,4,4,2,4", "must divide"),
        ("v1:64,64,16,64,64,4,2,4", "threads per block"),
        ("v1:64,64,16,4,4,3,2,4", "vec must be"),
        ("v1:128,128,64,8,8,4,1,4", "shared memory"),
        ("v1:64,64,16,4,4,4,1,32", "unroll 32 is more than bk 16"),
        ("v2:64,64,16,4,4,4,2,4", "v1:BM,BN,BK"),
    ],
)
def test_bad_perf_configs_are_refused(text, match):
    with pytest.raises(ConfigError, match=match):
        g.PerfConfig.parse(text)


def test_bad_problems_are_refused():
    with pytest.raises(ConfigError, match="epilogue must be one of"):
        g.Problem("p", 4, 4, 4, "tanh")
    with pytest.raises(ConfigError, match="without '/'"):
        g.Problem("a/b", 4, 4, 4)
    with pytest.raises(ConfigError, match="positive integer"):
        g.Problem("p", 0, 4, 4)
    with pytest.raises(ConfigError, match="2\\^31"):
        g.Problem("p", 1 << 20, 1 << 12, 4)
    assert g.PerfConfig.parse(" v1:64,64,16,4,4,4,2,4 ").perf_config == "v1:64,64,16,4,4,4,2,4"


def test_launch_takes_the_devices_own_count():
    """The tail's grid is capped at 8 blocks per multiprocessor of the count given (no H100/H200
    default); a missing or bad count is refused by name."""
    prob, cfg = g.Problem("p", 512, 512, 64, "bias"), g.PerfConfig(64, 64, 16, 4, 4, 4, 2, 4)
    assert g.launch("pointwise", prob, cfg, 4) == ((32, 1, 1), (g.TAIL_THREADS, 1, 1))
    assert g.launch("pointwise", prob, cfg, 300)[0][0] == -(-512 * 512 // g.TAIL_VEC // g.TAIL_THREADS)
    assert g.launch("gemm", prob, cfg, 4) == g.launch("gemm", prob, cfg, 300)
    assert_the_count_is_required(lambda *count: g.launch("pointwise", prob, cfg, *count))


@pytest.mark.gpu
@pytest.mark.parametrize("epilogue", list(g.EPILOGUES))
def test_generated_cuda_text_matches_numpy_on_the_gpu(cuda, epilogue):
    """The generated C++ (the text hiprtc compiles too) run on an NVIDIA GPU: every epilogue,
    fused and split-K (atomic partial sums), ragged and aligned shapes, vector and scalar loads."""
    from hipexplore.compile.cache import CompileCache

    comp = _compiler("nvrtc")
    cache = CompileCache(disk_dir=False, remote=False)  # the tails repeat across candidates here too
    cases = [((m, n, k), cfg) for m, n, k in SHAPES for cfg in CONFIGS]
    cases += [
        ((257, 130, 1030), g.PerfConfig(128, 128, 16, 8, 8, 4, 1, 4)),
        ((257, 130, 1030), g.PerfConfig(64, 32, 16, 4, 2, 2, 2, 16)),
        ((1, 6144, 4096), g.PerfConfig(16, 64, 32, 1, 4, 4, 8, 32)),
        ((16, 1000, 2048), g.PerfConfig(16, 128, 32, 1, 8, 4, 1, 8)),
    ]
    for (m, n, k), cfg in cases:
        prob = g.Problem("p", m, n, k, epilogue)
        err = hxrun.check_candidate(
            cuda, prob, cfg, lambda r: cache.get_or_compile(r, comp).object_code, seed=m * 7 + k
        )
        assert err < hxrun.DEFAULT_RTOL, (epilogue, (m, n, k), cfg.perf_config, err)
