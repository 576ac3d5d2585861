"""hipexplore.report.recorded: recorded sweeps read back for the report (a note for a folder of
several sweeps, a flag for data recorded at another revision)."""

from __future__ import annotations


def test_recorded_data_from_another_revision_is_flagged():
    from hipexplore.report import provenance_table

    table = provenance_table({"git_revision": "13b4955aaaa"}, {"git_revision": "5365a97bbbb+dirty"})
    note = table.loc["recorded.revision", "recorded data"]
    assert "DIFFERENT REVISION" in note and "5365a97" in note and "13b4955" in note
    assert table.index[0] == "recorded.revision"
    same = provenance_table({"git_revision": "13b4955aaaa"}, {"git_revision": "13b4955aaaa+dirty"})
    assert "recorded.revision" not in same.index


def test_several_sweeps_note_is_one_readable_sentence(tmp_path):
    from hipexplore.bench import sweep
    from hipexplore.report import load_recorded

    for i in range(3):
        sweep(
            "triad",
            ["4KiB"],
            [1] * 1 if i else [1, 2],
            ["none"],
            device="host",
            iterations=4,
            progress=False,
            reference=False,
            out=tmp_path / f"s{i}.parquet",
        )
    rec = load_recorded(tmp_path)
    assert (
        len(rec.notes) == 1
        and "holds 3 sweeps; showing run" in rec.notes[0]
        and "(2 configurations, the most)" in rec.notes[0]
    )
    assert rec.notes[0].count("configurations") == 1
