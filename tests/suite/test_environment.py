"""What the suite needs, checked by name: with ``HIPEXPLORE_REQUIRE_COMPILERS=1`` (``.ci/run``) a
missing compiler or tool fails here, before any test could skip past it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import CHROMIUM_PATHS, OBJDUMP_NAMES, require_compiler, require_tool, required

COMPILERS = ("hiprtc", "nvrtc", "host")


@pytest.mark.parametrize("name", COMPILERS)
def test_compiler_is_available(name):
    compiler = require_compiler(name)
    assert compiler.available()
    ident = compiler.identity()
    assert ident.name == name and ident.version


def test_llvm_objdump_is_available():
    path = require_tool(*OBJDUMP_NAMES)
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and "amdgcn" in out.stdout.lower(), out.stdout[-400:]


def test_chromium_is_available():
    path = require_tool(*CHROMIUM_PATHS)
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "chrom" in out.stdout.lower(), out.stdout + out.stderr


def test_require_flag_turns_a_missing_compiler_into_a_failure(tmp_path):
    """The switch itself: a compiler made unavailable fails the test under the flag, skips without it."""
    test = tmp_path / "test_gone.py"
    test.write_text("from conftest import require_compiler\ndef test_x():\n    require_compiler('hiprtc')\n")
    env = {
        **os.environ,
        "HIPEXPLORE_HIPRTC_LIBRARY": str(tmp_path / "no-such-libhiprtc.so"),
        "PYTHONPATH": os.path.dirname(os.path.dirname(__file__)),
    }
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(test)]
    strict = subprocess.run(
        args, env={**env, "HIPEXPLORE_REQUIRE_COMPILERS": "1"}, capture_output=True, text=True, timeout=300
    )
    assert strict.returncode == 1, strict.stdout[-2000:]
    assert "compiler hiprtc required" in strict.stdout
    lax = subprocess.run(
        args, env={**env, "HIPEXPLORE_REQUIRE_COMPILERS": "0"}, capture_output=True, text=True, timeout=300
    )
    assert lax.returncode == 0 and "1 skipped" in lax.stdout, lax.stdout[-2000:]


def test_ci_sets_the_require_flag():
    ci = open(os.path.join(os.path.dirname(__file__), "..", "..", ".ci", "run")).read()
    assert "HIPEXPLORE_REQUIRE_COMPILERS=1" in ci
    if os.environ.get("CI") == "true":
        assert required()


def test_redis_server_and_client_are_available():
    """The Redis cache tier's tests start a real redis-server (Debian package) and use redis-py."""
    from conftest import missing, require_tool

    require_tool("redis-server")
    try:
        import redis  # noqa: F401
    except ImportError:
        missing("redis-py", "not installed (setup.sh --dev installs the 'remote' extra)")
