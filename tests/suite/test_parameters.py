"""No function in ``hipexplore/bench/`` takes more than 8 parameters (issue 48 item 6): a function that
needs the run's context takes it whole (``unit_in_worker`` a ``UnitRun``, ``Orchestrator`` and ``run``
a ``RunOptions``, ``run_cluster`` a ``ClusterOptions``, ``SweepRun`` a ``UnitRun``, the output checks a
``CheckTarget``; ``callable_kernel``'s check an ``OutputCheck``) instead of a dozen of its fields one by one.

The rule, read from the source with ``ast``: every positional (positional-only included) and
keyword-only parameter counts one, ``self`` and ``cls`` excepted; ``*args`` and ``**kwargs`` count one
each. Nested functions and lambdas count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MOST = 8

pytestmark = pytest.mark.timeout(60)


def parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> int:
    a = fn.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    return len([n for n in names if n not in ("self", "cls")]) + (a.vararg is not None) + (a.kwarg is not None)


def over(source: str, most: int = MOST) -> dict[str, int]:
    """``name: count`` of every function (lambdas as ``<lambda>:LINE``) of ``source`` over ``most``."""
    found = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and parameters(node) > most:
            found[getattr(node, "name", f"<lambda>:{node.lineno}")] = parameters(node)
    return found


def test_the_count_follows_the_rule():
    assert over("def f(self, a, b, /, c, *d, e, f=1, **g): pass", 0) == {"f": 7}
    assert over(
        "class C:\n    def m(cls, a, b, c, d, e, f, g, h): pass\n    def n(self, a, b, c, d, e, f, g, h, i): pass"
    ) == {"n": 9}
    assert over("g = lambda a, b, c, d, e, f, g, h, *i: 0", 8) == {"<lambda>:1": 9}


def test_no_function_in_bench_takes_more_than_eight_parameters():
    found = {
        (str(path.relative_to(REPO)), name): count
        for path in sorted((REPO / "hipexplore" / "bench").rglob("*.py"))
        for name, count in over(path.read_text()).items()
    }
    assert not found, f"over {MOST} parameters (take the context whole, e.g. a dataclass): {sorted(found.items())}"
