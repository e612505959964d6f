"""The package's structure, read from the source with ``ast``: no import circle, no arrow up the
layers (``tests/support/import_graph.LAYERS``), and each registered backend's code imported only
inside its own folder (or module) and by the registry. ``python3 -m tests.support.import_graph``
prints the figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparklock.managers.backend import Backend
from sparklock.managers.registry import BACKENDS
from tests.support import import_graph as g

EDGES = g.graph()


def test_the_graph_is_read():
    # the checks below would pass on an empty graph: make sure they see the real one
    assert "sparklock.managers.base" in EDGES and "sparklock.managers.registry" in EDGES
    assert "sparklock.managers.base" in EDGES["sparklock.managers.embedded"]


def test_no_import_circle():
    assert g.circles(EDGES) == []


def test_every_module_has_a_layer_and_imports_none_above_it():
    assert g.unlayered(EDGES) == [], "place new top-level names in import_graph.LAYERS"
    assert g.upward(EDGES) == []


def _backend_home(backend: Backend) -> str:
    """The module or folder a registry entry lives in: ``sparklock.managers.<name>``."""
    return ".".join(backend.create.__module__.split(".")[:3])


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_a_backends_code_is_imported_only_inside_its_folder_and_by_the_registry(name):
    home = _backend_home(BACKENDS[name])
    assert home.startswith("sparklock.managers.") and home in EDGES
    assert g.intruders(EDGES, home, {"sparklock.managers.registry"}) == []


def test_each_backend_has_a_home_of_its_own():
    homes = [_backend_home(b) for b in BACKENDS.values()]
    assert len(set(homes)) == len(homes)
    shared = {
        "sparklock.managers.base",
        "sparklock.managers.backend",
        "sparklock.managers.registry",
    }
    assert not shared & set(homes)


def test_the_checks_catch_what_they_look_for():
    """The checker itself on a small made-up graph: a circle, an arrow up, an intruder."""
    edges = {
        "sparklock.errors": {"sparklock.cli"},
        "sparklock.cli": {"sparklock.errors", "sparklock.managers.zookeeper.manager"},
        "sparklock.managers.zookeeper.manager": set(),
    }
    assert g.circles(edges) == [["sparklock.cli", "sparklock.errors"]]
    assert g.upward(edges) == [("sparklock.errors", "sparklock.cli")]
    assert g.intruders(edges, "sparklock.managers.zookeeper", ()) == [
        "sparklock.cli -> sparklock.managers.zookeeper.manager"
    ]


def _documented_layers() -> list[set[str]]:
    """The package names of each row of docs/architecture.md's layer table, bottom first."""
    text = (g.ROOT.parent / "docs" / "architecture.md").read_text()
    table = text.split("| layer | package | job |", 1)[1].split("\n\n", 1)[0]
    rows = [r for r in table.strip().splitlines()[1:] if r.startswith("|")]
    cells = [r.split("|")[2] for r in rows]
    return [{n.strip().strip("`") for n in c.split(",")} - {""} for c in cells]


def test_the_architecture_page_names_the_layers_the_code_has():
    expected = [{n or "__init__" for n in layer} for layer in g.LAYERS]
    assert _documented_layers() == expected


#: The ZooKeeper folder's tiers, bottom first: a module imports only its own tier and those below.
#: ``layout`` (the znode names) is below all three; ``""`` is the folder's top (the manager tier).
ZOOKEEPER = "sparklock.managers.zookeeper"
ZOOKEEPER_TIERS = ("layout", "wire", "recipe", "")


def _zookeeper_tier(name: str) -> int:
    rest = name[len(ZOOKEEPER) + 1 :].split(".")[0] if name != ZOOKEEPER else ""
    return ZOOKEEPER_TIERS.index(rest) if rest in ZOOKEEPER_TIERS else len(ZOOKEEPER_TIERS) - 1


def test_the_zookeeper_folder_is_in_tiers_wire_recipe_manager():
    inside = {n for n in EDGES if n == ZOOKEEPER or n.startswith(ZOOKEEPER + ".")}
    assert {f"{ZOOKEEPER}.wire.session", f"{ZOOKEEPER}.recipe.creation"} <= inside
    upward = sorted(
        f"{src} -> {dst}"
        for src in inside
        for dst in EDGES[src] & inside
        if _zookeeper_tier(dst) > _zookeeper_tier(src)
    )
    assert upward == []


#: The most lines a source file may have: past it, a module does more than one job.
MAX_LINES = 400


def _sources() -> list[Path]:
    repo = g.ROOT.parent
    found = sorted(g.ROOT.rglob("*.py"))
    for pattern in ("*.java", "*.scala"):
        found += sorted((repo / "jvm-shim" / "src").rglob(pattern))
    return found


def test_no_source_file_is_over_the_line_limit():
    repo = g.ROOT.parent
    sources = _sources()
    assert any(p.suffix == ".java" for p in sources) and len(sources) > 100
    over = {
        str(p.relative_to(repo)): n
        for p in sources
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert over == {}


def test_rules_import_neither_the_configuration_nor_a_backend():
    # the rule layer reads only its facts and the lock vocabulary's own value types
    found = sorted(
        f"{src} -> {dst}"
        for src, targets in EDGES.items()
        if src == "sparklock.rules" or src.startswith("sparklock.rules.")
        for dst in targets
        if dst == "sparklock.config" or dst.startswith("sparklock.managers")
    )
    assert found == []
    assert "sparklock.locks.statement_settings" in EDGES["sparklock.rules.policy"]
