"""The documentation's examples are run, so none can rot: every ```bash and ```python block of
README.md and docs/**/*.md runs on the host device, each page in its own temporary directory
(blocks of one page in order, sharing its files), with the repository's ``data/``, ``notebooks/``
and ``.venv`` linked in and a private compile cache.

A block is steered by an HTML comment on the line just above it (invisible on the rendered page):

  <!-- docs-test: needs=hiprtc,nvrtc,triton,host,gpu,redis -->   run only where those are present
  <!-- docs-test: file=NAME -->          the block is not run: its text is written to NAME first
  <!-- docs-test: exit=2 -->             the block must fail with this status (an error example)
  <!-- docs-test: skip REASON -->        not run; the reason is required and printed

A missing compiler skips its blocks, and fails them under ``HIPEXPLORE_REQUIRE_COMPILERS=1`` (as in
CI); a block needing a GPU skips without one unless ``HIPEXPLORE_REQUIRE_GPU=1``. Blocks in other
languages (text, c, yaml) are not run unless they carry ``file=``.

Also here: the README's own limits (at most 250 lines, the two set-up commands in its first 15, the
own-kernel example near the top) and the strict docs build.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import GPU, NOT_REQUIRED, missing, need, require_compiler

REPO = Path(__file__).resolve().parents[2]
RUN_LANGS = {"bash": "bash", "sh": "bash", "shell": "bash", "python": "python", "py": "python"}
NEEDS = {"hiprtc", "nvrtc", "triton", "host", "gpu", "redis"}
SETUP_LINES = (
    "./setup.sh && .venv/bin/hipexplore report --out report.html",
    "./setup.sh --dev && HIPEXPLORE_REQUIRE_COMPILERS=1 .venv/bin/python -m pytest -q -n auto --dist loadgroup",
)


@dataclass
class Block:
    page: str
    line: int
    lang: str
    text: str
    needs: tuple[str, ...] = ()
    file: str | None = None
    exit: int = 0
    skip: str | None = None
    directive: str = ""

    @property
    def runs(self) -> bool:
        return self.skip is None and self.file is None and self.lang in RUN_LANGS

    def __str__(self) -> str:
        return f"{self.page}:{self.line} ({self.lang})"


DIRECTIVE = re.compile(r"^<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(```+)\s*([\w+-]*)")


def parse_directive(text: str, where: str) -> dict:
    if text.startswith("skip"):
        reason = text[4:].strip()
        if not reason:
            raise ValueError(f"{where}: 'docs-test: skip' needs a reason")
        return {"skip": reason}
    out: dict = {}
    for part in text.split():
        key, _, value = part.partition("=")
        if key == "needs":
            needs = tuple(v for v in value.split(",") if v)
            unknown = set(needs) - NEEDS
            if unknown:
                raise ValueError(f"{where}: unknown needs {sorted(unknown)}; known: {sorted(NEEDS)}")
            out["needs"] = needs
        elif key == "file":
            if not value or value.startswith("/") or ".." in Path(value).parts:
                raise ValueError(f"{where}: file= needs a relative name inside the page's directory, got {value!r}")
            out["file"] = value
        elif key == "exit":
            out["exit"] = int(value)
        else:
            raise ValueError(f"{where}: unknown docs-test directive {part!r}")
    return out


def blocks_of(path: Path) -> list[Block]:
    """The fenced blocks of one Markdown file, with the directive above each."""
    rel = str(path.relative_to(REPO))
    lines = path.read_text().splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.groups()
        start = i
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        prev = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "") if start else ""
        d = DIRECTIVE.match(prev.strip())
        opts = parse_directive(d.group(1), f"{rel}:{start + 1}") if d else {}
        out.append(
            Block(rel, start + 1, lang.lower(), "\n".join(body) + "\n", directive=d.group(1) if d else "", **opts)
        )
    return out


def doc_pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


PAGES = {str(p.relative_to(REPO)): blocks_of(p) for p in doc_pages()}


def _gpu_reason() -> str | None:
    try:
        from hipexplore.devices import get_device

        dev = get_device("auto")
        kind = dev.kind
        dev.close()
        return None if kind in ("cuda", "hip") else "the best device here is the host CPU"
    except Exception as exc:  # noqa: BLE001 - any failure to open a GPU means none is usable
        return str(exc)


def require(needs: tuple[str, ...]) -> None:
    for what in needs:
        if what in ("hiprtc", "nvrtc", "triton", "host"):
            require_compiler(what)
        elif what == "redis":
            if not shutil.which("redis-server"):
                missing("tool redis-server", "not on PATH (setup.sh --dev installs it)")
        elif what == "gpu":
            reason = _gpu_reason()
            if reason:
                need("a GPU", reason, flag=GPU)  # fails by name under HIPEXPLORE_REQUIRE_GPU=1


def workdir(tmp: Path) -> dict[str, str]:
    """Link the read-only parts of the repository into ``tmp`` and return the environment."""
    for name in ("data", "notebooks", "benchmarks"):
        (tmp / name).symlink_to(REPO / name)
    (tmp / ".venv").symlink_to(Path(sys.prefix))
    bindir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIPEXPLORE_CACHE") and k != "HIPEXPLORE_DEBUG"}
    env.update(
        PATH=os.pathsep.join([bindir, env.get("PATH", "/usr/bin:/bin")]),
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")])),
        HIPEXPLORE_CACHE_DIR=str(tmp / "cache"),
        MPLBACKEND="Agg",
        PYTHONUNBUFFERED="1",
    )
    return env


def run_block(block: Block, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    if RUN_LANGS[block.lang] == "bash":
        cmd = ["bash", "-e", "-o", "pipefail", "-c", block.text]
    else:
        cmd = [sys.executable, "-c", block.text]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)


def page_params():
    return [pytest.param(page, id=page) for page, blocks in PAGES.items() if any(b.runs or b.file for b in blocks)]


@pytest.mark.timeout(
    1800
)  # a page runs several sweeps and reports: more than one test's default 600 s on a loaded host
@pytest.mark.parametrize("page", page_params())
def test_every_example_of_the_page_runs(page, tmp_path):
    """The page's blocks in order, in one directory: each must exit as documented."""
    env = workdir(tmp_path)
    ran, skipped = 0, []
    for block in PAGES[page]:
        if block.file:
            target = tmp_path / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text)
            continue
        if not block.runs:
            continue
        try:
            require(block.needs)
        except pytest.skip.Exception as exc:
            skipped.append(f"{block}: {exc}")
            continue
        res = run_block(block, tmp_path, env)
        ran += 1
        assert res.returncode == block.exit, (
            f"{block} exited {res.returncode}, documented {block.exit}:\n--- block\n{block.text}"
            f"--- stdout (tail)\n{res.stdout[-3000:]}\n--- stderr (tail)\n{res.stderr[-3000:]}"
        )
        if block.exit == 2:
            lines = [ln for ln in res.stderr.splitlines() if ln.strip() and "%|" not in ln]
            assert lines and "Traceback" not in res.stderr, (
                f"{block}: an error example must fail with one line:\n{res.stderr}"
            )
    if skipped and not ran:  # each requirement already had its flag's say (need, in require)
        need("what the page's examples need", "; ".join(skipped), flag=NOT_REQUIRED)
    for s in skipped:
        print("skipped", s)


def test_directives_parse_and_every_skip_names_its_reason():
    """A typo in a directive would silently stop an example from running: every directive parses,
    and only set-up blocks, or blocks that would need another machine, are skipped."""
    skips = [(str(b), b.skip) for blocks in PAGES.values() for b in blocks if b.skip]
    assert all(reason and len(reason) > 10 for _, reason in skips), skips
    assert len(skips) <= 8, f"too many skipped examples; run them instead: {skips}"
    runnable = [b for blocks in PAGES.values() for b in blocks if b.runs]
    assert len(runnable) >= 25, len(runnable)


def test_a_mistyped_directive_is_refused_not_ignored():
    with pytest.raises(ValueError, match="unknown docs-test directive"):
        parse_directive("need=gpu", "p.md:1")
    with pytest.raises(ValueError, match="needs a reason"):
        parse_directive("skip", "p.md:1")
    with pytest.raises(ValueError, match="unknown needs"):
        parse_directive("needs=amd", "p.md:1")
    with pytest.raises(ValueError, match="relative name"):
        parse_directive("file=../x.c", "p.md:1")


def test_readme_limits_and_the_own_kernel_command_near_the_top():
    """A newcomer's path: at most 250 lines, the two set-up commands exactly as .ci/run runs them in
    the first 15, and the own-kernel command (`--source` with `--args`) within the first 50 lines."""
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 250, len(lines)
    head = lines[:15]
    for cmd in SETUP_LINES:
        assert any(ln.startswith(cmd) for ln in head), f"{cmd!r} is not in the README's first 15 lines"
    own = next(i for i, ln in enumerate(lines) if "hipexplore bench" in ln and "--source" in ln and "--args" in ln)
    assert own < 50, f"the own-kernel command is at line {own + 1}"
    ci = (REPO / ".ci" / "run").read_text()
    assert SETUP_LINES[1] in ci, ".ci/run no longer runs the README's test command"


def test_every_role_of_an_argument_spec_is_documented():
    """The own-kernels guide documents every buffer role the parser accepts (inout was once
    documented nowhere but an example file)."""
    import typing

    from hipexplore.kernels.spec import ArgRole

    page = (REPO / "docs" / "guide" / "own-kernels.md").read_text()
    for role in typing.get_args(ArgRole):
        assert f"`{role}`" in page, role


def test_docs_build_strictly(tmp_path):
    """`mkdocs build --strict`: a broken link, a missing page in the nav or an API name that no
    longer resolves fails (setup.sh --dev runs the same build)."""
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        missing("tool mkdocs", "not installed (setup.sh --dev installs the docs extra)")
    res = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-4000:]
    api = (tmp_path / "site" / "reference" / "bench" / "index.html").read_text()
    assert "SweepSpec" in api
    assert "CompileCache" in (tmp_path / "site" / "reference" / "compile" / "index.html").read_text()
    assert "compare" in (tmp_path / "site" / "reference" / "verdicts" / "index.html").read_text()
    index = (tmp_path / "site" / "search" / "search_index.json").read_text()
    assert "--args" in index and "inout" in index, "the search index does not find the own-kernel command"
