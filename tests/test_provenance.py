"""hipexplore.provenance: what a run records about where it ran (the host device's driver and
bandwidth, the command a notebook ran, the machine hash)."""

from __future__ import annotations


def test_host_provenance_explains_driver_and_bandwidth():
    from hipexplore.devices import get_device
    from hipexplore.provenance import collect

    dev = get_device("host")
    try:
        info = collect(dev, command="x", compilers=False)
    finally:
        dev.close()
    assert info["device.driver"].startswith("none (host CPU")
    assert (
        info["device.peak_bandwidth_gbs"].startswith("unknown")
        and "nan" not in info["device.peak_bandwidth_gbs"].lower()
    )


def test_command_in_a_notebook_and_machine_hash():
    from hipexplore.provenance import default_command, machine_hash

    argv = ["/x/ipykernel_launcher.py", "-f", "/root/.local/share/jupyter/runtime/kernel-1.json"]
    assert (
        default_command(argv, {"JPY_SESSION_NAME": "/w/notebooks/dashboard.ipynb"})
        == "notebook /w/notebooks/dashboard.ipynb"
    )
    assert "ipykernel_launcher" not in default_command(argv, {})
    assert default_command(["/usr/bin/hipexplore", "bench", "triad"], {}) == "hipexplore bench triad"
    a = machine_hash("3d1219c7", "vm", 0x1234)
    assert a != machine_hash("9f00aa11", "vm", 0x1234) and a != machine_hash("3d1219c7", "vm", 0x5678)
    assert len(a) == 12 and a == machine_hash("3d1219c7", "vm", 0x1234)


def test_each_compilers_recorded_version_is_its_identitys_and_a_broken_one_is_named(monkeypatch):
    """Provenance reads versions without hashing compiler files (``Compiler.version``): the string
    must be the identity's own, for every compiler of this machine; a compiler whose version cannot
    be read is recorded as unavailable with the reason, and the others still are."""
    from hipexplore.compile.registry import backend_class, compiler_info
    from hipexplore.provenance import compiler_versions

    got = compiler_versions()
    rows = {r["name"]: r for r in compiler_info()}
    assert {k for k in got if k.startswith("compiler.")} == {f"compiler.{n}" for n in rows}
    # and each available compiler's own cache (issue 45): the state its compiles record
    assert {k for k in got if k.startswith("compiler_cache.")} == {
        f"compiler_cache.{n}" for n, r in rows.items() if r["available"]
    }
    if rows["host"]["available"]:
        assert got["compiler_cache.host"].startswith("none: the host C compiler has no cache of its own")
    for name, row in rows.items():
        if row["available"]:
            assert got[f"compiler.{name}"] == row["version"] != ""
        else:
            assert got[f"compiler.{name}"].startswith("unavailable: ")
    assert backend_class("host")().version() == rows["host"]["version"]
    monkeypatch.setenv("CC", "/nonexistent/cc")
    broken = compiler_versions()
    assert broken["compiler.host"].startswith("unavailable: ") and "/nonexistent/cc" in broken["compiler.host"]
    others = lambda d: {k: v for k, v in d.items() if not k.endswith(".host")}  # noqa: E731
    assert others(broken) == others(got) and "compiler_cache.host" not in broken
