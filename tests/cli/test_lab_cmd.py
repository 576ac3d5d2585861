"""hipexplore.cli.lab_cmd: the ``jupyter lab`` command line ``hipexplore lab`` runs (``--allow-root``
only for root). JupyterLab really started by it: tests/e2e/test_first_run_cli.py."""

from __future__ import annotations


def test_lab_adds_allow_root_only_for_root():
    from hipexplore.cli.lab_cmd import lab_command

    assert "--allow-root" in lab_command("notebooks", 0)
    assert "--allow-root" not in lab_command("notebooks", 1000)
    assert lab_command("nb", 1000, ["--no-browser"])[-2:] == ["nb", "--no-browser"]
