"""The harness's sub-packages are floors: a module imports only from its own floor and
the floors below it, and from another floor only the names its ``__init__`` exports.
Unlike the cycle test, imports under ``if TYPE_CHECKING:`` count here: an annotation
that needs a higher floor is a design that points the wrong way. The command line and
every other package outside the harness use public names only."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "hy_eval"
HARNESS = PACKAGE / "harness"

#: Bottom first. A floor may import any floor listed before it.
FLOORS = ["text", "runlog", "datasets", "scoring", "analysis", "report", "gate", "systems", "run"]


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def harness_imports(path: Path) -> list[tuple[int, str]]:
    """Every ``hy_eval.harness`` module an import statement of ``path`` names, with its
    line, TYPE_CHECKING blocks and function bodies included. ``from pkg import mod``
    names the submodule when ``mod`` is one."""
    found = []
    here = _module(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # ``from ..report import x``: resolved against this package
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *([module] if module else [])])
            for a in node.names:
                sub = HARNESS.joinpath(*module.split(".")[2:], a.name)
                is_module = sub.with_suffix(".py").is_file() or sub.is_dir()
                found.append((node.lineno, f"{module}.{a.name}" if is_module else module))
    return [(line, m) for line, m in found if m.startswith("hy_eval.harness")]


def floor_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[2] in FLOORS else None


def problems_of(path: Path) -> list[str]:
    here = _module(path)
    own = floor_of(here)
    out = []
    for line, target in harness_imports(path):
        floor = floor_of(target)
        where = f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}"
        private = any(p.startswith("_") for p in target.split(".")[3:])
        if own is None:
            # The harness's own __init__ and every package outside it: public names only.
            if private or (floor is None and target != "hy_eval.harness" and here != target):
                out.append(f"{where}: not a public name")
        elif floor is None:
            out.append(f"{where}: the harness's top-level package, above every floor")
        elif FLOORS.index(floor) > FLOORS.index(own):
            out.append(f"{where}: floor {floor} is above floor {own}")
        elif floor != own and private:
            out.append(f"{where}: a private module of floor {floor}; import its __init__")
    return out


def test_every_floor_has_a_public_init_with_all():
    for floor in FLOORS:
        init = HARNESS / floor / "__init__.py"
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{floor}/__init__.py says what lives there"
        names = [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets]
        assert "__all__" in names, f"{floor}/__init__.py lists its public names in __all__"
    flat = sorted(p.name for p in HARNESS.glob("*.py") if p.name != "__init__.py")
    assert flat == [], f"modules outside any floor: {flat}"


def test_imports_point_down_and_through_public_names():
    problems = [p for path in sorted(PACKAGE.rglob("*.py")) for p in problems_of(path)]
    assert problems == [], "\n".join(problems)


def test_the_check_sees_type_checking_imports_and_private_paths(tmp_path, monkeypatch):
    # Planted files in a copy of the layout: each wrong import must be reported.
    fake = tmp_path / "hy_eval"
    for floor in FLOORS:
        (fake / "harness" / floor).mkdir(parents=True)
        (fake / "harness" / floor / "__init__.py").write_text('"""x"""\n__all__ = []\n')
    (fake / "harness" / "run" / "_config.py").write_text("")
    (fake / "harness" / "scoring" / "_strict.py").write_text("")
    up = fake / "harness" / "datasets" / "_up.py"
    up.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from hy_eval.harness.run._config import RunConfig\n"
    )
    side = fake / "harness" / "report" / "_side.py"
    side.write_text("def f():\n    from hy_eval.harness.scoring._strict import decide\n")
    cli = fake / "cli.py"
    cli.write_text("from hy_eval.harness.scoring import _strict\n")
    relative = fake / "harness" / "scoring" / "_relative.py"
    relative.write_text("from ..report import draw\n")
    fine = fake / "harness" / "report" / "_fine.py"
    fine.write_text("from hy_eval.harness.scoring import decide\n")
    monkeypatch.setattr(f"{__name__}.PACKAGE", fake)
    monkeypatch.setattr(f"{__name__}.HARNESS", fake / "harness")
    assert "above floor datasets" in " ".join(problems_of(up))
    assert "private module of floor scoring" in " ".join(problems_of(side))
    assert "not a public name" in " ".join(problems_of(cli))
    assert "floor report is above floor scoring" in " ".join(problems_of(relative))
    assert problems_of(fine) == []
