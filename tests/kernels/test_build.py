"""``hipexplore.kernels.build``: a kernel spec to a compile request (the timed variant, the
inline-icache transform only for hiprtc, a source file read again with its headers keyed), compiled
through the device's cache, loaded once per device and request content (an edited source builds
again), and a compiler's log naming the user's own file. Real compiles with the host's cc."""

from __future__ import annotations

import pytest

from conftest import require_compiler
from hipexplore.compile.cache import CompileCache
from hipexplore.devices.host import HostDevice
from hipexplore.errors import CompileError, ConfigError, UnsupportedOperation
from hipexplore.kernels import catalog, user_kernel
from hipexplore.kernels.build import TIMED_OPTION, KernelBuilder, compile_kernel, last_path, request_for, user_paths

pytestmark = pytest.mark.timeout(180)

FILL = '#include "value.h"\nvoid bd_fill(float* a, unsigned long long n) { for (unsigned long long i = 0; i < n; ++i) a[i] = VALUE; }\n'


@pytest.fixture
def dev(tmp_path):
    require_compiler("host")
    d = HostDevice()
    d.cache = CompileCache(disk_dir=tmp_path / "cache")
    yield d
    d.close()


def test_a_request_carries_the_variant_asked_for_and_refuses_what_the_kernel_cannot_be():
    triad = catalog.get("triad")
    plain = request_for(triad, "host", "host")
    assert plain.kernels == (triad.entry_for("host"),) and TIMED_OPTION not in plain.options and plain.label == "triad"
    timed_name = next(n for n in catalog.names() if catalog.get(n).timer)
    timed = request_for(catalog.get(timed_name), "nvrtc", "sm_90", timed=True)
    assert TIMED_OPTION in timed.options and timed.label == f"{timed_name}+timer" and timed.source.name.endswith(".cu")
    untimed = next(n for n in catalog.names() if not catalog.get(n).timer and catalog.get(n).call is None)
    with pytest.raises(ConfigError, match=f"kernel '{untimed}' has no in-kernel timer"):
        request_for(catalog.get(untimed), "host", "host", timed=True)
    with pytest.raises(
        ConfigError, match="inline-icache inserts AMD instructions and needs the hiprtc compiler, not 'nvrtc'"
    ):
        request_for(triad, "nvrtc", "sm_90", inline_icache=True)


def test_a_kernel_from_a_file_is_keyed_with_its_headers_and_built_again_when_one_changes(dev, tmp_path):
    src, header = tmp_path / "fill.c", tmp_path / "value.h"
    src.write_text(FILL)
    header.write_text("#define VALUE 1.0f\n")
    spec = user_kernel(src, "bd_fill", "out:a:f32[n],n:u64=n", name="bd_fill", register_it=False)
    request = request_for(spec, "host", "host")
    assert [h.name for h in request.headers] == ["value.h"]  # the sibling header is in the key
    builder = KernelBuilder()
    first = builder.loaded(dev, spec)
    assert builder.loaded(dev, spec) is first and last_path() == "cache"  # memoized per device
    assert builder.loaded(HostDevice(), spec) is not first  # ...and per device
    header.write_text("#define VALUE 2.0f\n")
    again = builder.loaded(dev, spec)
    assert again is not first and again.code.binary != first.code.binary  # an edited header builds anew
    assert compile_kernel(spec, "host", "host", cache=dev.cache).binary == again.code.binary  # the cache's entry
    with pytest.raises(UnsupportedOperation, match="inline-icache inserts AMD GPU instructions .* the host device"):
        builder.loaded(dev, spec, inline_icache=True)


def test_a_compile_error_names_the_users_file(dev, tmp_path):
    src = tmp_path / "src" / "broken.c"
    src.parent.mkdir()
    src.write_text("void bd_broken(float* a) { a[0] = undefined_name; }\n")
    spec = user_kernel(src, "bd_broken", "out:a:f32[n]", name="bd_broken", register_it=False)
    with pytest.raises(CompileError) as err:
        KernelBuilder().loaded(dev, spec)
    assert f"{src}:1:" in err.value.log and "undefined_name" in err.value.log
    log = "$ cc -c broken.c\nbroken.c:2:11: error: x\nnot_broken.c:1:1: note"
    assert (
        user_paths(log, "broken.c", "src/broken.c")
        == "$ cc -c broken.c\nsrc/broken.c:2:11: error: x\nnot_broken.c:1:1: note"
    )
