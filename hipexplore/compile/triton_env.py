"""The environment Triton reads, classified for the compile cache's key (#25.4).

Why a module of its own: which variables change the code object ``triton.compile`` returns is found
in Triton's own files (``knobs.py``, its ``getenv`` calls, ``GetEnv.h``) and classified here: keyed by
value, keyed by the contents of the file they name, never cached, or neutral. ``triton_source``
builds requests with it; ``tritonc`` passes the keyed values to its workers.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import re
from pathlib import Path
from typing import Mapping


# -- the environment Triton reads ------------------------------------------------------------------
#: Variables Triton reads that change nothing in the code object ``triton.compile`` returns: where
#: its caches and dumps go, printing, profiling, the runtime libraries and devices of a launch,
#: the C compiler of its launcher stub, its own test runner. Not keyed.
NEUTRAL_ENV = frozenset(
    {
        "TRITON_CACHE_DIR",
        "TRITON_HOME",
        "TRITON_DUMP_DIR",
        "TRITON_CACHE_MANAGER",
        "TRITON_REMOTE_CACHE_BACKEND",
        "TRITON_REDIS_HOST",
        "TRITON_REDIS_PORT",
        "TRITON_REDIS_KEY_FORMAT",
        "TRITON_PRINT_AUTOTUNING",
        "TRITON_CACHE_AUTOTUNING",
        "TRITON_ALWAYS_COMPILE",
        "TRITON_KERNEL_DUMP",
        "TRITON_STORE_BINARY_ONLY",
        "TRITON_INTERPRET",
        "TRITON_ENABLE_NVTX",
        "TRITON_LIBCUDA_PATH",
        "TRITON_LIBHIP_PATH",
        "TRITON_PROTON_DISABLE",
        "TRITON_DUMP_PTXAS_LOG",
        "TRITON_HSA_RUNTIME_PATH",
        "TRITON_HSA_RUNTIME_LIBRARY",
        "TRITON_ENABLE_HW_TRACE",
        "TRITON_ROCPROFILER_SDK_INCLUDE_PATH",
        "TRITON_ROCPROFILER_SDK_LIB_PATH",
        "TRITON_ROCPROFILER_SDK_LIBRARY",
        "TRITON_ROCTRACER_LIB_PATH",
        "TRITON_ROCTRACER_LIBRARY",
        "TRITON_ROCTX_LIB_PATH",
        "TRITON_ROCTX_LIBRARY",
        "TRITON_CUPTI_LIB_PATH",
        "TRITON_CUPTI_LIB_BLACKWELL_PATH",
        "TRITON_PROFILE_BUFFER_SIZE",
        "TRITON_PROFILE_METRIC_BUFFER_SIZE",
        "TRITON_CUOBJDUMP_PATH",
        "TRITON_NVDISASM_PATH",
        "TRITON_CUDACRT_PATH",
        "TRITON_CUDART_PATH",
        "TRITON_DEFAULT_BACKEND",
        "TRITON_REPRODUCER_PATH",
        "TRITON_ENABLE_PYTHON_STACKTRACE",
        "TRITON_CI_CACHE_PHASE",
        "TRITON_CI_COMPILE_TRACE_DIR",
        "TRITON_TEST_JUNIT_DIR",
        "TRITON_TEST_NUM_GPUS",
        "TRITON_TEST_PROCESS_TIMEOUT",
        "TRITON_TEST_VISIBLE_GPUS",
        "TRITON_WARMUP_COMPILER_WORKER",
        "TRITON_WARMUP_COORDINATOR",
        "TRITON_WARMUP_DEBUG",
        "WARMUP_PROCS",
        "DISABLE_SUBPROCESS",
        "NUM_GPUS",
        "NUM_PROCS",
        "PYTEST_XDIST_WORKER",
        "PYTEST_XDIST_WORKER_COUNT",
        "CUDA_VISIBLE_DEVICES",
        "HIP_VISIBLE_DEVICES",
        "CC",
        "CXX",
        "LD_LIBRARY_PATH",
        "HIP_PATH",
        "ROCM_PATH",
        "PATH",
        "LLVM_SYMBOLIZER_PATH",
        "LLVM_DISABLE_SYMBOLIZATION",
        "LLVM_ENABLE_SYMBOLIZER_MARKUP",
    }
)
#: Kept for callers of the old name.
NON_CODEGEN_ENV = NEUTRAL_ENV
#: Variables naming files the compile reads: their value is keyed, and the files' contents too
#: (``TritonCompiler.implicit_inputs``; a script, whose choice of tool is not in the key, is not cached).
FILE_ENV = frozenset(
    {
        "TRITON_PTXAS_PATH",
        "TRITON_PTXAS_BLACKWELL_PATH",
        "TRITON_LIBDEVICE_PATH",
        "TRITON_AMD_CODEGEN_PATH",
        "LLVM_PASS_PLUGIN_PATH",
        "TRITON_PLUGIN_PATHS",
    }
)
#: Variables that make the compile read files chosen at compile time (IR overrides, MIR swaps):
#: a request with one set is compiled every time, never cached.
UNCACHEABLE_ENV = {
    "TRITON_KERNEL_OVERRIDE": "replaces the kernel's IR with files from TRITON_OVERRIDE_DIR",
    "TRITON_SWAP_MIR": "replaces the generated MIR with files from that folder",
}
#: Variables whose value changes the code (or what Triton writes with it): keyed by value. With
#: the three sets above this covers every variable Triton 3.9 reads (``triton_env_names``; a test
#: checks the installed Triton against it).
VALUE_ENV = frozenset(
    {
        "ALLOW_LHS_TMEM_LAYOUT_CONVERSION",
        "AMDGCN_ANALYZE_SMALL_TENSOR_RANGE",
        "AMDGCN_ENABLE_DUMP",
        "AMDGCN_SCALARIZE_PACKED_FOPS",
        "AMDGCN_USE_BUFFER_ATOMICS",
        "AMDGCN_USE_BUFFER_OPS",
        "DISABLE_LLVM_OPT",
        "DISABLE_MMA_V3",
        "DISABLE_MMA_V5",
        "DISABLE_PTXAS_OPT",
        "LLVM_ENABLE_TIMING",
        "LLVM_EXTRACT_DI_LOCAL_VARIABLES",
        "LLVM_IR_ENABLE_DUMP",
        "MLIR_DISABLE_MULTITHREADING",
        "MLIR_DUMP_PATH",
        "MLIR_ENABLE_DIAGNOSTICS",
        "MLIR_ENABLE_DUMP",
        "MLIR_ENABLE_TIMING",
        "NVPTX_ENABLE_DUMP",
        "PTXAS_OPTIONS",
        "TRITON_ALLOW_NON_CONSTEXPR_GLOBALS",
        "TRITON_BACKENDS_IN_TREE",
        "TRITON_CONSAN_INIT_ALLOCATIONS",
        "TRITON_DEBUG",
        "TRITON_DEFAULT_FP_FUSION",
        "TRITON_DISABLE_LINE_INFO",
        "TRITON_DUMP_MIR",
        "TRITON_ENABLE_ASAN",
        "TRITON_ENABLE_EXPERIMENTAL_CONSAN",
        "TRITON_ENABLE_LLVM_DEBUG",
        "TRITON_F32_DEFAULT",
        "TRITON_FORCE_DISABLE_FP_FUSION",
        "TRITON_FPSAN_HOMOMORPHIC_CASTS",
        "TRITON_FRONT_END_DEBUGGING",
        "TRITON_HIP_USE_ASYNC_COPY",
        "TRITON_HIP_USE_BLOCK_PINGPONG",
        "TRITON_HIP_USE_COEXEC_SCHEDULER",
        "TRITON_HIP_USE_EXPERT_SCHEDULING",
        "TRITON_HIP_USE_IN_THREAD_TRANSPOSE",
        "TRITON_INSTRUMENTATION_MODE",
        "TRITON_LLVM_DEBUG_ONLY",
        "TRITON_MOCK_PTX_VERSION",
        "TRITON_OVERRIDE_ARCH",
        "TRITON_OVERRIDE_DIR",
        "TRITON_PARTITION_SCHEDULING_DUMP_DATA_ONLY",
        "TRITON_PARTITION_SCHEDULING_DUMP_LOOP_ONLY",
        "TRITON_PARTITION_SCHEDULING_ENABLE_DUMP_DOT",
        "TRITON_PLUGIN_VERSION_CHECK",
        "TRITON_SWAP_MIR_ENABLE_MISCHED",
        "USE_IR_LOC",
    }
)
#: Any other variable of Triton's, LLVM's or MLIR's families that is set is keyed by value too:
#: keying one too many costs a miss, one too few serves stale code.
_KNOB_RX = re.compile(r"^(TRITON|AMDGCN|MLIR|LLVM|NVPTX)_[A-Z0-9_]+$|^(DISABLE_LLVM_OPT|DISABLE_PTXAS_OPT|USE_IR_LOC)$")
_ENV_CALL_RX = re.compile(
    r"""(?:getenv(?:_bool)?|environ\.get|os\.getenv|environ\.pop|environ\.setdefault)\(\s*["']"""
    r"""([A-Za-z_][A-Za-z0-9_]*)["']|environ\[\s*["']([A-Za-z_][A-Za-z0-9_]*)["']\s*\]"""
)
_TRUE = frozenset({"1", "true", "on", "yes"})


def _triton_root() -> str | None:
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        return None
    return os.path.dirname(spec.origin) if spec is not None and spec.origin else None


@functools.lru_cache(maxsize=8)
def _env_names_in(root: str, stamp: tuple) -> frozenset[str]:
    names: set[str] = set()
    try:
        tree = ast.parse(Path(root, "knobs.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        tree = ast.Module(body=[], type_ignores=[])
    for n in ast.walk(tree):  # env_bool("TRITON_X"), env_nvidia_tool("ptxas") -> TRITON_PTXAS_PATH
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id.startswith("env_")
            and n.args
            and isinstance(n.args[0], ast.Constant)
            and isinstance(n.args[0].value, str)
        ):
            v = n.args[0].value
            names.add(f"TRITON_{v.upper().replace('-', '_')}_PATH" if n.func.id == "env_nvidia_tool" else v)
    for dirpath, dirnames, files in os.walk(root):
        dirnames.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                try:
                    text = Path(dirpath, f).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                for m in _ENV_CALL_RX.finditer(text):
                    names.add(m.group(1) or m.group(2))
    try:  # the C++ side reads only the variables its GetEnv.h lists
        header = Path(root, "include", "triton", "Tools", "Sys", "GetEnv.h").read_text(encoding="utf-8")
    except OSError:
        header = ""
    for m in re.finditer(r"std::set<std::string>\s+\w+\s*=\s*\{(.*?)\};", header, re.S):
        names.update(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', m.group(1)))
    return frozenset(names)


def triton_env_names() -> frozenset[str]:
    """Every environment variable the installed Triton reads, found in its files without importing
    it: the ``env_*`` knobs of ``knobs.py``, ``getenv``/``os.environ`` reads in its Python sources,
    and the lists of ``include/triton/Tools/Sys/GetEnv.h`` (what its C++ reads). Empty without Triton."""
    root = _triton_root()
    if root is None:
        return frozenset()
    try:
        st = os.stat(os.path.join(root, "knobs.py"))
        stamp: tuple = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        stamp = ()
    return _env_names_in(root, stamp)


def knob_names(environ: Mapping[str, str] | None = None) -> set[str]:
    """The variables that enter a Triton request's key when set (see ``triton_environment``)."""
    env = os.environ if environ is None else environ
    known = VALUE_ENV | FILE_ENV | frozenset(UNCACHEABLE_ENV) | triton_env_names()
    return {k for k in env if (k in known or _KNOB_RX.match(k)) and k not in NEUTRAL_ENV}


def triton_environment(environ: Mapping[str, str] | None = None) -> tuple[dict[str, str], list[str]]:
    """(the keyed variables set in ``environ`` (default: this process's), sorted; the reasons the
    request must not be cached). Keyed: every variable Triton reads but ``NEUTRAL_ENV``, and any
    other of its families' that is set. Not cached: one of ``UNCACHEABLE_ENV`` set, or one the
    installed Triton reads that this table does not know (a newer Triton: it may read files)."""
    env = os.environ if environ is None else environ
    keyed = {k: env[k] for k in sorted(knob_names(env))}
    why = []
    for name, what in UNCACHEABLE_ENV.items():
        value = env.get(name)
        if value is not None and value.strip() and (name != "TRITON_KERNEL_OVERRIDE" or value.strip().lower() in _TRUE):
            why.append(f"{name}={value} {what} at compile time (not cached)")
    unknown = sorted(
        k for k in keyed if k in triton_env_names() and k not in VALUE_ENV | FILE_ENV | set(UNCACHEABLE_ENV)
    )
    for k in unknown:
        why.append(f"{k} is read by the installed Triton but not known to hipexplore (not cached)")
    return keyed, why


def codegen_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The code-generating Triton variables set in ``environ`` (default: this process's)."""
    return triton_environment(environ)[0]


__all__ = [
    "NEUTRAL_ENV",
    "NON_CODEGEN_ENV",
    "FILE_ENV",
    "UNCACHEABLE_ENV",
    "VALUE_ENV",
    "triton_env_names",
    "knob_names",
    "triton_environment",
    "codegen_env",
]
