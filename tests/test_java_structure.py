"""The JVM shim's structure, read from the Java sources (``tests/support/java_graph``, no javac):
role packages under ``io.sparklock.shim`` whose dependencies point one way, no class loop that
leaves its package, and data packages that name no other shim package.
``python3 -m tests.support.java_graph --edges`` prints the figures."""

from __future__ import annotations

from tests.support import java_graph as g

EDGES = g.graph()
ROOT = g.ROOT_PACKAGE


def test_the_graph_is_read():
    # the checks below would pass on an empty graph: make sure they see the real one
    assert f"{ROOT}.SparkLockExtensions" in EDGES
    assert f"{ROOT}.wire.Facts" in EDGES[f"{ROOT}.facts.FactsExtractor"]
    assert len(g.package_graph(EDGES)) > 5
    # a compat variant's references count (the Spark 4.0 CALL hook locks through the guard)
    assert f"{ROOT}.guard.AnalysisTimeLocks" in EDGES[f"{ROOT}.hook.ProcedureCalls"]


def test_no_package_cycle():
    assert g.package_cycles(EDGES) == []


def test_no_class_cycle_across_packages():
    assert g.cross_package_class_cycles(EDGES) == []


def test_data_packages_name_no_other_shim_package():
    assert set(g.DATA_PACKAGES) <= set(g.package_graph(EDGES)), "a data package moved or vanished"
    assert g.impure_data(EDGES) == []


def test_the_checks_catch_what_they_look_for():
    """The checker itself on made-up sources: a package cycle, a class loop across packages, a
    data record that names behaviour; and what is not a reference (comments, strings)."""
    sources = [
        (
            "A",
            "package io.sparklock.shim.wire;\nimport io.sparklock.shim.guard.B;\nclass A { B b; }",
        ),
        (
            "B",
            "package io.sparklock.shim.guard;\nimport io.sparklock.shim.wire.*;\n"
            'class B { A a; /* C */ String s = "C"; }',
        ),
        ("C", "package io.sparklock.shim.guard;\nclass C { io.sparklock.shim.util.D d; }"),
        ("D", "package io.sparklock.shim.util;\nclass D {}"),
    ]
    edges = g.graph_of(sources)
    assert edges == {
        f"{ROOT}.wire.A": {f"{ROOT}.guard.B"},
        f"{ROOT}.guard.B": {f"{ROOT}.wire.A"},
        f"{ROOT}.guard.C": {f"{ROOT}.util.D"},
        f"{ROOT}.util.D": set(),
    }
    assert g.package_cycles(edges) == [[f"{ROOT}.guard", f"{ROOT}.wire"]]
    assert g.cross_package_class_cycles(edges) == [[f"{ROOT}.guard.B", f"{ROOT}.wire.A"]]
    assert g.impure_data(edges) == [f"{ROOT}.wire.A -> {ROOT}.guard.B"]
    # one-way arrows pass
    one_way = {k: v for k, v in edges.items() if k != f"{ROOT}.guard.B"}
    assert g.package_cycles(one_way) == [] and g.cross_package_class_cycles(one_way) == []
