"""The import direction of the validate stack: nothing imports a layer above it, and checks/ has no circle.

Layers, lowest first: ``findings`` (severities, Finding, DatasetReport) -> ``dataset`` (the model) ->
``checks.catalogue`` -> ``checks.context`` -> the check families -> ``checks.engine`` -> ``report`` /
``validate`` / ``repair``. Every import counts, including those inside functions (lazy imports are still
dependencies).
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "lerobot_tools"
FAMILIES = ["counts", "deep", "files", "info", "rowgroups", "schema", "stats", "targets", "tasks", "videos"]


def _module(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(module: str) -> set[str]:
    """Every ``lerobot_tools`` module ``module`` imports (``from pkg import sub`` counts as ``pkg.sub``)."""
    path = PKG.parent / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = PKG.parent / module.replace(".", "/") / "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("lerobot_tools")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lerobot_tools"):
            out.add(node.module)
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                if (PKG.parent / (sub.replace(".", "/") + ".py")).exists() or (PKG.parent / sub.replace(".", "/")).is_dir():
                    out.add(sub)
    return out


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def test_findings_import_nothing_from_the_package():
    assert _imports("lerobot_tools.findings") == set()


def test_catalogue_sits_on_findings_only():
    # the catalogue is two modules (its families X, Q and L in catalogue_across), both on findings and check only
    assert _imports("lerobot_tools.checks.catalogue") == {"lerobot_tools.findings", "lerobot_tools.checks.check",
                                                          "lerobot_tools.checks.catalogue_across"}
    assert _imports("lerobot_tools.checks.catalogue_across") == {"lerobot_tools.findings", "lerobot_tools.checks.check"}
    assert _imports("lerobot_tools.checks.check") == set()


def test_no_family_or_context_imports_the_engine_or_a_higher_layer():
    higher = ("lerobot_tools.checks.engine", "lerobot_tools.report", "lerobot_tools.validate",
              "lerobot_tools.repair", "lerobot_tools.commands", "lerobot_tools.cli")
    for mod in ["context"] + FAMILIES:
        got = _imports(f"lerobot_tools.checks.{mod}")
        bad = sorted(i for i in got if any(_under(i, h) for h in higher))
        assert not bad, f"checks.{mod} imports {bad}"
    ctx = _imports("lerobot_tools.checks.context")
    assert not any(_under(i, f"lerobot_tools.checks.{f}") for i in ctx for f in FAMILIES)


def test_report_and_dataset_do_not_import_checks():
    for path in [PKG / "report.py", *sorted((PKG / "dataset").glob("*.py"))]:
        mod = _module(path)
        bad = sorted(i for i in _imports(mod) if any(_under(i, h) for h in (
            "lerobot_tools.checks", "lerobot_tools.repair", "lerobot_tools.validate")))
        assert not bad, f"{mod} imports {bad}"


def test_no_import_circle_in_checks():
    mods = [_module(p) for p in sorted((PKG / "checks").glob("*.py"))]
    graph = {m: {i for i in _imports(m) if i in mods and i != m} for m in mods}
    state: dict[str, int] = {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for n in graph[m]:
            assert state.get(n) != 1, "import circle: " + " -> ".join(stack + [m, n])
            if n not in state:
                visit(n, stack + [m])
        state[m] = 2

    for m in mods:
        if m not in state:
            visit(m, [])
