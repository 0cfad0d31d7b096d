"""The rule of docs/architecture.md: code in one package of vera imports another package
through its public surface (the package, or a module without a leading underscore), never
that package's private `_name` modules. import-linter checks layers but cannot say
"private", so this test reads every import statement of vera/ with `ast`, lazy imports
inside functions included. Tests are exempt: they may reach into private modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

VERA = Path(__file__).resolve().parent.parent / "vera"


def package_of(path: Path) -> str:
    """`vera.report` for vera/report/card/_build.py; `vera.records` for vera/records.py."""
    parts = path.relative_to(VERA.parent).with_suffix("").parts
    return ".".join(parts[:2])


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """Every (line, dotted name) an import statement names, `from X import _y` as `X._y`
    since `_y` may be a private module."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [
                (node.lineno, f"{node.module}.{alias.name}")
                for alias in node.names
                if alias.name.startswith("_")
            ]
    return found


def crossings(path: Path, tree: ast.AST) -> list[str]:
    """The private modules of other packages that this file imports."""
    own = package_of(path)
    bad = []
    for line, name in imported_modules(tree):
        parts = name.split(".")
        if parts[0] != "vera" or len(parts) < 3:
            continue
        if ".".join(parts[:2]) == own:
            continue
        if any(part.startswith("_") for part in parts[2:]):
            bad.append(f"{path.relative_to(VERA.parent)}:{line}: imports {name}")
    return bad


def test_no_package_imports_another_packages_private_modules() -> None:
    bad = []
    for path in sorted(VERA.rglob("*.py")):
        bad += crossings(path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
    assert bad == []


def test_the_check_sees_a_crossing_and_allows_the_own_package() -> None:
    # The rule must be able to fail: a private import from another package is caught,
    # whether written as a module path or as a name, and lazily inside a function.
    source = (
        "from vera.report.compare._compare import read_run\n"
        "from vera.clients import _transport\n"
        "def f():\n"
        "    import vera.store._writer\n"
        "from vera.engine._plan import x\n"
        "from vera.report import read_run\n"
        "from vera.clients.base import ChatClient\n"
    )
    found = crossings(VERA / "engine" / "_judge.py", ast.parse(source))
    assert found == [
        "vera/engine/_judge.py:1: imports vera.report.compare._compare",
        "vera/engine/_judge.py:2: imports vera.clients._transport",
        "vera/engine/_judge.py:4: imports vera.store._writer",
    ]
