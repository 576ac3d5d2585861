"""Sources as written: runtime headers, sibling headers and -I directories compile with hiprtc,
NVRTC and cc; the include closure is keyed, so editing any header recompiles and an unrelated
file does not (issue 10, part 1).

The kernels are shaped like real ones: a HIP stencil pulling its coefficients from a header in an
include directory (which itself includes a nested header), a tile size from a header beside the
source, and the runtime header every HIP/CUDA file starts with.
"""

from __future__ import annotations

import ctypes
import json

import numpy as np
import pytest

from hipexplore.cli import main
from hipexplore.compile.cache import CompileCache
from hipexplore.compile.includes import BUILTIN_HEADERS, include_closure, with_closure
from hipexplore.compile.request import CompileRequest, Source
from hipexplore.errors import ConfigError

STENCIL = r"""#include <{runtime}>
#include "tile.h"
#include <stencil/coeffs.h>

extern "C" __global__ void stencil5(float* __restrict__ out, const float* __restrict__ in, int n) {{
  __shared__ float tile[TILE + 4];
  int i = blockIdx.x * TILE + threadIdx.x;
  if (i < n) tile[threadIdx.x + 2] = in[i];
  __syncthreads();
  if (i >= 2 && i < n - 2)
    out[i] = C0 * tile[threadIdx.x + 2] + C1 * (tile[threadIdx.x + 1] + tile[threadIdx.x + 3])
           + C2 * (tile[threadIdx.x] + tile[threadIdx.x + 4]);
}}
"""


@pytest.fixture
def tree(tmp_path):
    """src/stencil.<ext> + src/tile.h beside it; inc/stencil/coeffs.h -> inc/stencil/detail/c2.h."""
    (tmp_path / "src").mkdir()
    (tmp_path / "inc" / "stencil" / "detail").mkdir(parents=True)
    (tmp_path / "src" / "tile.h").write_text("#pragma once\n#define TILE 128\n")
    (tmp_path / "inc" / "stencil" / "coeffs.h").write_text(
        '#pragma once\n#include "detail/c2.h"\n#define C0 0.5f\n#define C1 0.25f\n'
    )
    (tmp_path / "inc" / "stencil" / "detail" / "c2.h").write_text("#define C2 0.125f\n")
    (tmp_path / "inc" / "unrelated.h").write_text("#define NOT_INCLUDED 1\n")
    return tmp_path


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("HIPEXPLORE_CACHE_DIR", str(path))
    monkeypatch.delenv("HIPEXPLORE_CACHE_DISK", raising=False)
    return path


def compile_json(capsys, *argv: str) -> dict:
    rc = main(["compile", *argv, "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    return json.loads(out.out)


CASES = [
    ("hiprtc", "gfx90a", "hip/hip_runtime.h", "stencil.hip"),
    ("nvrtc", "sm_90", "cuda_runtime.h", "stencil.cu"),
]


@pytest.mark.parametrize("compiler,target,runtime,fname", CASES)
def test_runtime_sibling_and_include_dir_compile_and_every_header_is_keyed(
    compiler, target, runtime, fname, tree, cache_dir, capsys, request
):
    request.getfixturevalue(f"need_{compiler}")
    src = tree / "src" / fname
    src.write_text(STENCIL.format(runtime=runtime))
    argv = (str(src), "--compiler", compiler, "--target", target, "--kernel", "stencil5", "-I", str(tree / "inc"))
    first = compile_json(capsys, *argv)
    assert first["outcome"] == "compiled" and first["bytes"] > 0
    names = {h["name"]: h for h in first["headers"]}
    assert set(names) == {"tile.h", "stencil/coeffs.h", "detail/c2.h", runtime}
    assert names["detail/c2.h"]["path"] == str((tree / "inc/stencil/detail/c2.h").resolve())
    assert names["detail/c2.h"]["included_from"] == str((tree / "inc/stencil/coeffs.h").resolve())
    assert "built-in" in names[runtime]["path"]
    # nothing changed: the same key, from disk
    again = compile_json(capsys, *argv)
    assert (again["outcome"], again["key"]) == ("disk-hit", first["key"])
    # an unrelated file in the include directory changes nothing
    (tree / "inc" / "unrelated.h").write_text("#define NOT_INCLUDED 2\n")
    assert compile_json(capsys, *argv)["key"] == first["key"]
    # editing each header of the closure (sibling, -I dir, nested) compiles anew under a new key
    keys = {first["key"]}
    for rel, text in (
        ("src/tile.h", "#pragma once\n#define TILE 64\n"),
        ("inc/stencil/coeffs.h", '#pragma once\n#include "detail/c2.h"\n#define C0 0.6f\n#define C1 0.2f\n'),
        ("inc/stencil/detail/c2.h", "#define C2 0.1f\n"),
    ):
        (tree / rel).write_text(text)
        now = compile_json(capsys, *argv)
        assert now["outcome"] == "compiled", rel
        assert now["key"] not in keys, f"editing {rel} kept the key"
        keys.add(now["key"])


def test_fp16_and_stdint_headers_hiprtc(need_hiprtc, tmp_path, cache_dir, capsys):
    src = tmp_path / "h2f.hip"
    src.write_text(
        "#include <hip/hip_runtime.h>\n#include <hip/hip_fp16.h>\n#include <cstdint>\n"
        'extern "C" __global__ void h2f(float* out, const __half* in, uint32_t n) {\n'
        "  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) out[i] = __half2float(in[i]);\n}\n"
    )
    rep = compile_json(capsys, str(src), "--compiler", "hiprtc", "--target", "gfx90a", "--kernel", "h2f")
    assert {h["name"] for h in rep["headers"]} == {"hip/hip_runtime.h", "hip/hip_fp16.h", "cstdint"}


def test_stdint_nvrtc(need_nvrtc, tmp_path, cache_dir, capsys):
    src = tmp_path / "iota.cu"
    src.write_text(
        "#include <cuda_runtime.h>\n#include <stdint.h>\n"
        'extern "C" __global__ void iota(int64_t* out, uint32_t n) {\n'
        "  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = (int64_t)i * 3;\n}\n"
    )
    rep = compile_json(capsys, str(src), "--compiler", "nvrtc", "--target", "sm_90", "--kernel", "iota")
    assert rep["outcome"] == "compiled"


def test_host_cc_sibling_and_angled_include_dir(need_host_cc, tree, cache_dir, capsys, tmp_path):
    """cc: the closure is laid out in the build folder; an angled include from -I resolves too,
    and the library computes with the header's values (so the right text reached the compiler)."""
    src = tree / "src" / "stencil.c"
    src.write_text(
        '#include <stdint.h>\n#include "tile.h"\n#include <stencil/coeffs.h>\n'
        "float coeff_sum(void) { return C0 + 2 * C1 + 2 * C2 + (float)TILE; }\n"
    )
    out = tmp_path / "lib.so"
    rep = compile_json(capsys, str(src), "--compiler", "host", "-I", str(tree / "inc"), "--out", str(out))
    assert {h["name"] for h in rep["headers"]} == {"tile.h", "stencil/coeffs.h", "detail/c2.h"}
    assert "stdint.h" in rep["system_headers"]
    fn = ctypes.CDLL(str(out)).coeff_sum
    fn.restype = ctypes.c_float
    assert fn() == pytest.approx(0.5 + 0.5 + 0.25 + 128)
    (tree / "inc/stencil/detail/c2.h").write_text("#define C2 1.0f\n")
    rep2 = compile_json(capsys, str(src), "--compiler", "host", "-I", str(tree / "inc"), "--out", str(out))
    assert rep2["outcome"] == "compiled" and rep2["key"] != rep["key"]
    copy = tmp_path / "lib2.so"  # dlopen caches by path: load a copy
    copy.write_bytes(out.read_bytes())
    fn = ctypes.CDLL(str(copy)).coeff_sum
    fn.restype = ctypes.c_float
    assert fn() == pytest.approx(0.5 + 0.5 + 2.0 + 128)


def test_closure_search_order_and_refusals(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "a" / "cfg.h").write_text("#define FROM_A 1\n")
    (tmp_path / "b" / "cfg.h").write_text("#define FROM_B 1\n")
    (tmp_path / "src" / "cfg.h").write_text("#define FROM_SRC 1\n")
    main_c = tmp_path / "src" / "k.c"
    # quoted: beside the including file first; angled: -I dirs in order (never beside)
    c1 = include_closure(
        '#include "cfg.h"\n', compiler="host", source_path=main_c, include_dirs=[tmp_path / "a", tmp_path / "b"]
    )
    assert [f.text for f in c1.files] == ["#define FROM_SRC 1\n"]
    c2 = include_closure(
        "#include <cfg.h>\n", compiler="host", source_path=main_c, include_dirs=[tmp_path / "b", tmp_path / "a"]
    )
    assert [f.text for f in c2.files] == ["#define FROM_B 1\n"]
    # a macro include follows the literal spelling the macro is defined to; other forms are listed
    c3 = include_closure("#define H <cfg.h>\n#include H\n", compiler="host", include_dirs=[tmp_path / "a"])
    assert [f.text for f in c3.files] == ["#define FROM_A 1\n"] and c3.unresolved == ()
    c4 = include_closure("#define S(x) #x\n#include S(cfg.h)\n", compiler="host", include_dirs=[tmp_path / "a"])
    assert c4.files == () and c4.unresolved and "S(cfg.h)" in c4.unresolved[0]
    # the same spelling naming two different files: refused (RTC compilers match by spelling)
    (tmp_path / "a" / "x.h").write_text('#include "cfg.h"\n')
    with pytest.raises(ConfigError, match="names two different files"):
        include_closure(
            '#include "cfg.h"\n#include <x.h>\n', compiler="nvrtc", source_path=main_c, include_dirs=[tmp_path / "a"]
        )
    with pytest.raises(ConfigError, match="include directory .* does not exist"):
        include_closure("", compiler="host", include_dirs=[tmp_path / "nope"])
    # -I as a raw option is still refused (it would read unkeyed files); the message says what to use
    with pytest.raises(ConfigError, match="--include-dir"):
        CompileRequest(Source("k.c", ""), "host", "host", options=(f"-I{tmp_path}",))


def test_with_closure_puts_header_text_in_the_key(tmp_path, need_host_cc):
    """The closure's headers enter the key by the SHA-256 of their text (issue 28: the text itself
    made a tuning list's key records 79 KB); an edit to the header is another key."""
    import hashlib

    (tmp_path / "w.h").write_text("#define W 3\n")
    src = tmp_path / "k.c"
    src.write_text('#include "w.h"\nint w(void) { return W; }\n')
    cache = CompileCache(disk_dir=False)
    req, closure = with_closure(CompileRequest(Source("k.c", src.read_text()), "host", "host"), source_path=src)
    assert [h.name for h in req.headers] == ["w.h"] and closure.record()[0]["sha256"]
    k1 = cache.key_for(req)
    assert hashlib.sha256(b"#define W 3\n").hexdigest().encode() in k1.canonical
    (tmp_path / "w.h").write_text("#define W 4\n")
    req2, _ = with_closure(CompileRequest(Source("k.c", src.read_text()), "host", "host"), source_path=src)
    assert cache.key_for(req2).digest != k1.digest


def test_user_kernel_rebuilds_when_a_header_changes(need_host_cc, tmp_path):
    """A notebook edits a header between two sweeps: the builder compiles anew and the loaded
    function computes with the new value (the source file is re-read too)."""
    from hipexplore.devices.host import HostDevice
    from hipexplore.devices.base import pack_args
    from hipexplore.kernels.build import BUILDER
    from hipexplore.kernels.catalog import user_kernel

    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "gain.h").write_text("#define GAIN 2.0f\n")
    src = tmp_path / "gain.c"
    src.write_text(
        "#include <gain.h>\nvoid gain(float* y, const float* x, unsigned long long n) {\n"
        "  for (unsigned long long i = 0; i < n; ++i) y[i] = GAIN * x[i]; }\n"
    )
    spec = user_kernel(
        src,
        "gain",
        "out:y:f32[n],in:x:f32[n],n:u64=n",
        name="test_gain_hdr",
        include_dirs=[tmp_path / "inc"],
        register_it=False,
    )
    dev = HostDevice()
    dev.cache = CompileCache(disk_dir=False)

    def run_once() -> np.ndarray:
        x = np.arange(8, dtype=np.float32)
        y = np.zeros(8, dtype=np.float32)
        fn = BUILDER.loaded(dev, spec).function
        dev.launch(fn, (1, 1, 1), (1, 1, 1), pack_args(spec.args, {"y": y.ctypes.data, "x": x.ctypes.data, "n": 8}))
        return y

    assert run_once()[3] == 6.0
    assert run_once()[3] == 6.0 and len(dev.cache.events()) == 1  # memoized: no second lookup
    (tmp_path / "inc" / "gain.h").write_text("#define GAIN 5.0f\n")
    assert run_once()[3] == 15.0
    src.write_text(src.read_text().replace("GAIN * x[i]", "GAIN * x[i] + 1.0f"))
    assert run_once()[3] == 16.0
    assert list(dev.cache.events()["outcome"]) == ["compiled", "compiled", "compiled"]


def test_builtin_headers_are_only_for_runtime_compilers():
    assert "hip/hip_runtime.h" in BUILTIN_HEADERS["hiprtc"] and "cuda_runtime.h" in BUILTIN_HEADERS["nvrtc"]
    assert BUILTIN_HEADERS["host"] == {}
    c = include_closure("#include <hip/hip_runtime.h>\n", compiler="host")
    assert c.builtin == () and c.system == ("hip/hip_runtime.h",)
