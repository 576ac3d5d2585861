"""hipexplore/report/params.py: a report's parameters, names and values, checked before papermill,
a notebook kernel or a device starts (issue 49.1). ``flush: [none, l2-raed]`` in a parameters file
failed 10 s in (45 s loaded) as ``notebook dashboard.ipynb failed in cell 3``; ``report --device
bogus`` 38 s in; a misspelt name was refused by papermill's check, after the notebook was made,
without a hint."""

from __future__ import annotations

import json

import pytest

from fixtures.early_checks import probe
from hipexplore.errors import ConfigError
from hipexplore.report import notebook_parameters
from hipexplore.report.params import check_report_params, declared
from hipexplore.report.workspace import NOTEBOOKS


@pytest.mark.parametrize("notebook", sorted(NOTEBOOKS))
def test_the_declared_names_are_papermills(notebook):
    """The names read from the script's parameters cell (ast, no papermill) are the ones papermill
    finds in the notebook made from it: the early check knows what the notebook takes."""
    assert set(declared(notebook)) == set(notebook_parameters(notebook))


@pytest.mark.parametrize(
    "notebook, params, says",
    [
        ("dashboard", *case)
        for case in [
            (
                {"flush": ["none", "l2-raed"]},
                "parameter flush: flush mode 'l2-raed' is unknown; expected one of none, l2-write",
            ),
            ({"flsuh": ["none"]}, "unknown parameter 'flsuh' (did you mean 'flush'?) for notebook dashboard.ipynb"),
            ({"device": "bogus"}, "parameter device: device 'bogus' is unknown; expected one of auto, host, cuda, hip"),
            ({"sizes": ["1MiB", "nan"]}, "parameter sizes: size 'nan' is not a positive size"),
            ({"sizes": [1.5]}, "parameter sizes: size 1.5 is not a whole number of bytes"),
            (
                {"rotating": [1, "autp"]},
                "parameter rotating: rotating must be a positive integer or 'auto', got 'autp'",
            ),
            ({"kernel": "traid"}, "parameter kernel:"),
            ({"counters": "nsight"}, "parameter counters: counters must be on, off or a backend"),
            ({"compiler": "gcc"}, "parameter compiler: compiler 'gcc' is unknown; expected auto or one of"),
            ({"problems": "qkv,nope"}, "parameter problems: unknown problem 'nope'"),
            ({"cache": "redis"}, "parameter cache: cache 'redis' is unknown"),
            ({"data": "no/such/folder"}, "parameter data: 'no/such/folder' does not exist; expected 'live'"),
        ]
    ]
    + [
        ("review", *case)
        for case in [
            ({"threshold": 2}, "parameter threshold: threshold must be a fraction in (0, 1)"),
            ({"baseline": "missing.parquet"}, "parameter baseline: 'missing.parquet' does not exist"),
            ({"base_kernel": "nope"}, "parameter base_kernel:"),
            ({"allow_other_device": "yes"}, "parameter allow_other_device: 'yes' is not true or false"),
            (
                {"new_kernal": "triad"},
                "unknown parameter 'new_kernal' (did you mean 'new_kernel'?) for notebook review.ipynb",
            ),
        ]
    ],
)
def test_a_bad_parameter_is_one_line(notebook, params, says):
    with pytest.raises(ConfigError) as err:
        check_report_params(notebook, params)
    assert str(err.value).startswith(says) and "\n" not in str(err.value), str(err.value)


def test_good_parameters_pass_and_recorded_data_does_not_excuse_a_typo(tmp_path):
    check_report_params(
        "dashboard",
        {
            "device": "host",
            "sizes": ["4KiB", 65536],
            "rotating": [1, "auto"],
            "flush": "l2-read",
            "counters": False,
            "compiler": "host",
            "problems": "qkv",
            "data": str(tmp_path),
        },
    )
    with pytest.raises(ConfigError, match="l2-raed"):  # the data are recorded: flush would go unused, still refused
        check_report_params("dashboard", {"data": str(tmp_path), "flush": ["l2-raed"]})


@pytest.mark.parametrize(
    "argv, params, says",
    [
        (
            ["report", "--params", "p.yaml"],
            'flush: ["none", "l2-raed"]\n',
            "parameter flush: flush mode 'l2-raed' is unknown",
        ),
        (["report", "--params", "p.yaml"], 'flsuh: ["none"]\n', "unknown parameter 'flsuh' (did you mean 'flush'?)"),
        (
            ["report", "--params", "p.json"],
            json.dumps({"sizes": ["nan"]}),
            "parameter sizes: size 'nan' is not a positive size",
        ),
        (["report", "--device", "bogus"], None, "parameter device: device 'bogus' is unknown"),
        (
            ["report", "--baseline", "a.parquet", "--candidate", "b.parquet"],
            None,
            "parameter baseline: 'a.parquet' does not exist",
        ),
    ],
    ids=["flush-typo", "name-typo", "size-nan", "device-bogus", "missing-run"],
)
def test_report_refuses_before_papermill_a_kernel_or_a_device_starts(tmp_path, argv, params, says):
    """Through the real CLI in a fresh process: one line, exit 2, and no notebook kernel, papermill,
    device or any other process was started (``fixtures.early_checks``); report.html is not written."""
    if params is not None:
        (tmp_path / argv[2]).write_text(params)
    res = probe(*argv, cwd=tmp_path)
    line = res.one_line("report")
    assert says in line, line
    res.nothing_heavy()
    assert not (tmp_path / "report.html").exists()
