"""``hipexplore.tuning.listfile``: the tuning-list file format and the shipped real-model lists
(data/tuning/lists): each is at the scale of a real tuning flow and round-trips byte for byte,
every compiler expands them to the same kernels, ``tune-replay --list FILE --dry-run`` counts
without compiling, selections, a list a user writes (or exports) replays, and a bad file is refused
with one line and exit status 2. (The generator: test_generate.py; the models: test_models.py.)"""

from __future__ import annotations

import json

import pytest

from hipexplore.cli import main
from hipexplore.errors import ConfigError
from hipexplore.tuning import hxgen
from hipexplore.tuning import listfile
from hipexplore.tuning.models import MODELS

SHIPPED = sorted(MODELS)


@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_list_is_at_the_scale_of_a_real_tuning_flow(name):
    spec = listfile.read(name)
    counts = listfile.counts(spec)
    assert counts["kernels"] >= 1000 and counts["unique_kernels"] >= 300, counts
    assert spec.header["kernels"] == counts["kernels"] and spec.header["unique_kernels"] == counts["unique_kernels"]
    assert spec.header["problems"] == len(spec.problems) and spec.header["candidates"] == spec.n_candidates
    # several batch sizes, several candidates per problem, and the tails repeat (what a cache saves)
    sizes = {m.get("tokens", m.get("batch")) for m in spec.meta.values()}
    assert len(sizes) >= 2
    assert max(len(c) for c in spec.candidates.values()) >= 16
    assert counts["kernels"] - counts["unique_kernels"] >= 400
    # the file round-trips byte for byte
    assert listfile.dumps(spec) == listfile.resolve(name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", SHIPPED)
def test_every_compiler_expands_a_list_to_the_same_kernels(name):
    spec = listfile.read(name)
    host = listfile.expand(spec, "host", "host")
    assert (host.kernels, host.unique_kernels) == tuple(listfile.counts(spec).values())
    part = spec.select(every_problem=5)  # the GPU requests carry the whole header set: a slice is enough here
    want = listfile.counts(part)
    for compiler, target in (("hiprtc", "gfx90a"), ("nvrtc", "sm_90"), ("triton", "sm_90")):
        tl = listfile.expand(part, compiler, target)
        assert {"kernels": tl.kernels, "unique_kernels": tl.unique_kernels} == want, compiler
        assert len({e.label for e in tl.entries}) == tl.kernels  # every event names its entry
        assert tl.counts_by_role().keys() == {"gemm", "fill", "pointwise"}


def test_dry_run_counts_without_compiling(capsys, monkeypatch):
    from hipexplore.compile import registry

    def refuse(*a, **k):
        raise AssertionError("--dry-run must not build a compiler")

    monkeypatch.setattr(registry, "new_compiler", refuse)
    monkeypatch.setattr(registry, "get_compiler", refuse)
    for name in SHIPPED:
        assert main(["tune-replay", "--compiler", "hiprtc", "--list", name, "--dry-run", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        want = listfile.counts(listfile.read(name))
        assert (out["kernels"], out["unique_kernels"]) == (want["kernels"], want["unique_kernels"])
        assert out["list"] == name and out["headers_per_kernel"] == len(hxgen.PRELUDE_FILES)
    path = str(listfile.resolve("resnet50"))  # a path works as well as a name
    assert main(["tune-replay", "--compiler", "triton", "--target", "gfx942", "--list", path, "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "1202 kernels, 626 unique" in text and "nothing compiled" in text


def test_selections():
    spec = listfile.read("llama3-8b")
    every = spec.select(every_problem=6)
    assert [p.name for p in every.problems] == [spec.problems[i].name for i in range(0, len(spec.problems), 6)]
    assert all(every.candidates[p.name] == spec.candidates[p.name] for p in every.problems)  # whole problems
    lim = spec.select(problems="m256.o_proj,m1.qkv", limit=3)
    assert [p.name for p in lim.problems] == ["m256.o_proj", "m1.qkv"] and lim.n_candidates == 6
    sparse = spec.select(every=50)
    assert sparse.n_candidates == -(-spec.n_candidates // 50)
    assert spec.select(problems="2").problems == spec.problems[:2]
    with pytest.raises(ConfigError, match="no problem 'm3.qkv'"):
        spec.select(problems="m3.qkv")
    with pytest.raises(ConfigError, match="1..35"):
        spec.select(problems="99")


def test_a_list_a_user_writes_replays(tmp_path, capsys):
    """The smallest valid file: a header with format and version only, lines without the optional
    keys, a key of the writer's own (x_*) ignored, blank lines allowed."""
    from conftest import require_compiler

    require_compiler("host")
    f = tmp_path / "mine.jsonl"
    f.write_text(
        '{"format": "hipexplore.tuning-list", "version": 1}\n\n'
        '{"problem": "proj", "m": 24, "n": 40, "k": 2048, "epilogue": "bias_gelu", "perf_config": "v1:32,32,16,2,2,4,2,4", "x_ms": 0.3}\n'
        '{"problem": "proj", "m": 24, "n": 40, "k": 2048, "epilogue": "bias_gelu", "perf_config": "v1:32,32,16,2,2,4,4,16"}\n'
        '{"problem": "proj", "m": 24, "n": 40, "k": 2048, "epilogue": "bias_gelu", "perf_config": "v1:32,32,16,2,2,4,1,4"}\n'
        '{"problem": "down", "m": 24, "n": 40, "k": 64, "perf_config": "v1:32,32,16,2,2,4,1,4"}\n'
    )
    assert main(["tune-replay", "--compiler", "host", "--list", str(f), "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    # proj: split 2 and 4 share fill and tail (2 x 3 kernels, 4 unique) + one fused gemm; down: one fused gemm
    assert (out["kernels"], out["unique_kernels"], out["list"]) == (8, 6, "mine")
    assert out["compiles"] == 6 and out["memory_hits"] == 2 and out["failed"] == 0
    assert out["seconds_floor"] <= out["scenarios"]["memory"]["seconds"]


def test_export_list_round_trips(tmp_path, capsys):
    exported = tmp_path / "part.jsonl"
    assert (
        main(
            [
                "tune-replay",
                "--compiler",
                "nvrtc",
                "--list",
                "resnet50",
                "--every-problem",
                "7",
                "--dry-run",
                "--export-list",
                str(exported),
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    again = listfile.read(exported)
    assert listfile.counts(again) == {"kernels": out["kernels"], "unique_kernels": out["unique_kernels"]}
    assert again.rows() == listfile.read("resnet50").select(every_problem=7).rows()
    assert again.header["kernels"] == out["kernels"]  # the exported header carries the counts
    # the built-in transformer list exports too (its tails as epilogues), and reads back
    builtin = tmp_path / "builtin.jsonl"
    assert (
        main(
            [
                "tune-replay",
                "--compiler",
                "host",
                "--problems",
                "2",
                "--limit",
                "3",
                "--dry-run",
                "--export-list",
                str(builtin),
            ]
        )
        == 0
    )
    spec = listfile.read(builtin)
    assert [p.name for p in spec.problems] == ["qkv", "attn_out"] and spec.n_candidates == 6
    assert {p.epilogue for p in spec.problems} == {"bias"}
    assert main(["tune-replay", "--compiler", "triton", "--dry-run", "--export-list", str(tmp_path / "t.jsonl")]) == 2
    assert "Triton configs" in capsys.readouterr().err


HEADER = '{"format": "hipexplore.tuning-list", "version": 1}\n'
ROW = '{"problem": "p", "m": 4, "n": 8, "k": 16, "perf_config": "v1:32,32,16,2,2,4,1,4"}\n'
BAD_FILES = [
    ("", "empty list file"),
    (HEADER, "no candidate lines"),
    ('{"format": "other", "version": 1}\n' + ROW, "first line must be the header"),
    (ROW, "first line must be the header"),
    ('{"format": "hipexplore.tuning-list", "version": 2}\n' + ROW, "version 2 is not supported"),
    ('{"format": "hipexplore.tuning-list", "version": 1, "dtype": "fp16"}\n' + ROW, "dtype 'fp16'"),
    ('{"format": "hipexplore.tuning-list", "version": 1, "author": "me"}\n' + ROW, "unknown header key"),
    (HEADER + "[1, 2]\n", "expected a JSON object"),
    (HEADER + '{"problem": "p", "m": 4,\n', r":2: not JSON"),
    (HEADER + ROW.replace('"perf_config"', '"perf_cfg"'), "unknown key"),
    (HEADER + ROW.replace('"m": 4, ', ""), "missing 'm'"),
    (HEADER + ROW.replace('"m": 4', '"m": "4"'), "'m' must be an integer"),
    (HEADER + ROW.replace('"m": 4', '"m": true'), "'m' must be an integer"),
    (HEADER + ROW.replace('"m": 4', '"m": 0'), "positive integer"),
    (HEADER + ROW.replace('"problem": "p"', '"problem": "a/b"'), "without '/'"),
    (HEADER + ROW.replace("v1:32,32,16,2,2,4,1,4", "64x64"), "perf config must look like"),
    (HEADER + ROW.replace("v1:32,32,16,2,2,4,1,4", "v1:32,32,16,3,2,4,1,4"), "must divide"),
    (HEADER + ROW.replace('"k": 16,', '"k": 16, "epilogue": "tanh",'), "epilogue must be one of"),
    (HEADER + ROW + ROW, "repeats line 2"),
    (HEADER + ROW + ROW.replace('"k": 16', '"k": 32').replace(",1,4", ",2,4"), "4x8x16 none at line 2"),
    (HEADER + ROW.replace('"k": 16,', '"k": 16, "meta": 3,'), "'meta' must be an object"),
    (
        '{"format": "hipexplore.tuning-list", "version": 1, "candidates": 2}\n' + ROW,
        "says 2 candidates but the file has 1",
    ),
    (
        '{"format": "hipexplore.tuning-list", "version": 1, "kernels": 9}\n' + ROW,
        "says 9 kernels but the list expands to 1",
    ),
]


@pytest.mark.parametrize("text,match", BAD_FILES, ids=[m for _, m in BAD_FILES])
def test_a_bad_list_file_is_one_line_and_exit_2(tmp_path, capsys, text, match):
    import re

    f = tmp_path / "bad.jsonl"
    f.write_text(text)
    assert main(["tune-replay", "--compiler", "host", "--list", str(f), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert re.search(match, err), err
    assert str(f) in err or "bad.jsonl" in err


def test_list_files_that_are_not_files(tmp_path, capsys):
    cases = [
        (str(tmp_path / "nope.jsonl"), "no such file, and no shipped list"),
        (str(tmp_path), "not a regular file"),
        ("llama-9000", "shipped: llama3-8b, resnet50"),
    ]
    (tmp_path / "bin.jsonl").write_bytes(b'{"format": "hipexplore.tuning-list", "version": 1}\n\xff\xfe\n')
    cases.append((str(tmp_path / "bin.jsonl"), "not UTF-8"))
    for arg, match in cases:
        assert main(["tune-replay", "--compiler", "host", "--list", arg, "--dry-run"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and match in err, err
    for argv, match in (
        (["--every", "3"], "select from a --list"),
        (["--list", "resnet50", "--every", "0"], "positive integer"),
        (["--list", "resnet50", "--export-list", str(tmp_path / "x.txt")], "must name a .jsonl"),
    ):
        code = None
        try:
            code = main(["tune-replay", "--compiler", "host", "--dry-run", *argv])
        except SystemExit as exc:  # argparse refusals
            code = exc.code
        assert code == 2, argv
        assert match in capsys.readouterr().err
