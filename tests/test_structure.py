"""The package's structure, read from the source with ``ast``: no import circle, no arrow up the
layers (``tests/support/import_graph.LAYERS``), and a backend's code imported only inside its own
folder and by the registry. ``python3 -m tests.support.import_graph`` prints the figures."""

from __future__ import annotations

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


def test_zookeeper_code_is_imported_only_inside_its_folder_and_by_the_registry():
    allowed = {"sparklock.managers.registry"}
    assert g.intruders(EDGES, "sparklock.managers.zookeeper", allowed) == []


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
