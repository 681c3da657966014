"""The harness's sub-packages are floors: a module imports only from its own floor and
the floors below it, and from another floor only the names its ``__init__`` exports.
Unlike the cycle test, imports under ``if TYPE_CHECKING:`` count here: an annotation
that needs a higher floor is a design that points the wrong way. The command line and
every other package outside the harness use public names only. The LLM layer's
sub-packages, its rooms, are held by the same rules."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "hy_eval"

#: Bottom first. A floor may import any floor listed before it.
FLOORS = ["text", "runlog", "datasets", "scoring", "analysis", "report", "gate", "systems", "run"]
#: The LLM layer's rooms, bottom first, under the same rules.
ROOMS = ["core", "cache", "local", "providers", "batch", "serve"]
#: Each layered package: its sub-packages bottom first, and what one of them is called.
LAYERED = {"harness": (FLOORS, "floor"), "llm": (ROOMS, "room")}


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_imports(path: Path, layer: str) -> list[tuple[int, str]]:
    """Every ``hy_eval.<layer>`` module an import statement of ``path`` names, with its
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
                sub = PACKAGE.joinpath(*module.split(".")[1:], a.name)
                is_module = sub.with_suffix(".py").is_file() or sub.is_dir()
                found.append((node.lineno, f"{module}.{a.name}" if is_module else module))
    top = f"hy_eval.{layer}"
    return [(line, m) for line, m in found if m == top or m.startswith(f"{top}.")]


def floor_of(module: str, layer: str = "harness") -> str | None:
    parts = module.split(".")
    floors = LAYERED[layer][0]
    return parts[2] if len(parts) > 2 and parts[1] == layer and parts[2] in floors else None


def problems_of(path: Path) -> list[str]:
    out = []
    for layer in LAYERED:
        out += layer_problems(path, layer)
    return out


def layer_problems(path: Path, layer: str) -> list[str]:
    """What ``path`` imports of ``hy_eval.<layer>`` against that layer's order."""
    floors, word = LAYERED[layer]
    top = f"hy_eval.{layer}"
    here = _module(path)
    own = floor_of(here, layer)
    out = []
    for line, target in package_imports(path, layer):
        floor = floor_of(target, layer)
        where = f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}"
        private = any(p.startswith("_") for p in target.split(".")[3:])
        if own is None:
            # The layer's own __init__ and every package outside it: public names only.
            if private or (floor is None and target != top and here != target):
                out.append(f"{where}: not a public name")
        elif floor is None:
            out.append(f"{where}: the {layer}'s top-level package, above every {word}")
        elif floors.index(floor) > floors.index(own):
            out.append(f"{where}: {word} {floor} is above {word} {own}")
        elif floor != own and private:
            out.append(f"{where}: a private module of {word} {floor}; import its __init__")
    return out


def test_every_floor_has_a_public_init_with_all():
    for layer, (floors, word) in LAYERED.items():
        for floor in floors:
            init = PACKAGE / layer / floor / "__init__.py"
            tree = ast.parse(init.read_text(encoding="utf-8"))
            assert ast.get_docstring(tree), f"{layer}/{floor}/__init__.py says what lives there"
            names = [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets]
            assert "__all__" in names, f"{layer}/{floor}/__init__.py lists its names in __all__"
        flat = sorted(p.name for p in (PACKAGE / layer).glob("*.py") if p.name != "__init__.py")
        assert flat == [], f"modules of {layer} outside any {word}: {flat}"


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
    assert "above floor datasets" in " ".join(problems_of(up))
    assert "private module of floor scoring" in " ".join(problems_of(side))
    assert "not a public name" in " ".join(problems_of(cli))
    assert "floor report is above floor scoring" in " ".join(problems_of(relative))
    assert problems_of(fine) == []


def test_the_check_holds_the_llm_rooms(tmp_path, monkeypatch):
    # The same planted mistakes in the LLM layer's rooms, and a harness module reaching
    # into a room's private module.
    fake = tmp_path / "hy_eval"
    for room in ROOMS:
        (fake / "llm" / room).mkdir(parents=True)
        (fake / "llm" / room / "__init__.py").write_text('"""x"""\n__all__ = []\n')
    (fake / "llm" / "batch" / "_engine.py").write_text("")
    (fake / "llm" / "core" / "_base.py").write_text("")
    up = fake / "llm" / "core" / "_up.py"
    up.write_text("def f():\n    from hy_eval.llm.serve import LLMServer\n")
    side = fake / "llm" / "serve" / "_side.py"
    side.write_text("from hy_eval.llm.core._base import Request\n")
    top = fake / "llm" / "cache" / "_top.py"
    top.write_text("from hy_eval.llm import Request\n")
    (fake / "harness").mkdir()
    outside = fake / "harness" / "_runner.py"
    outside.write_text("from hy_eval.llm.batch import _engine\n")
    fine = fake / "llm" / "batch" / "_fine.py"
    fine.write_text("from hy_eval.llm.batch._engine import x\nfrom hy_eval.llm.core import y\n")
    monkeypatch.setattr(f"{__name__}.PACKAGE", fake)
    assert "room serve is above room core" in " ".join(problems_of(up))
    assert "private module of room core" in " ".join(problems_of(side))
    assert "the llm's top-level package, above every room" in " ".join(problems_of(top))
    assert "not a public name" in " ".join(problems_of(outside))
    assert problems_of(fine) == []
