"""sparklock's import graph, read with ``ast`` (no module is imported): circles, arrows that run
up the layers, and who imports a backend's code.

``python3 -m tests.support.import_graph [PACKAGE_DIR] [--edges]`` prints the figures (modules,
import arrows, circles, upward arrows, the longest chain of imports); ``tests/test_structure.py``
holds the rules. Every import counts: one inside a function (a lazy import is still a
dependency) and one under ``if TYPE_CHECKING:`` (a type names what the module depends on).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "sparklock"

#: The layers of ``sparklock/``, bottom first, by first name below ``sparklock.``: a module may
#: import its own layer's modules and those below, never one above. ``""`` is the package itself
#: (``sparklock/__init__.py``, the public API).
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "errors",
        "failures",
        "help_text",
        "values",
    ),  # what every layer speaks: errors, conditions, values, help in plain words
    ("locks", "telemetry"),  # the lock vocabulary; events only Python sees
    ("managers",),  # the port, the registry, the backends
    ("config", "config_keys"),  # spark.sparklock.*: generic keys plus each backend's section
    ("rules",),  # what a statement locks: facts, command table, policy
    ("protocol", "shim"),  # what crosses the bridge to the JVM; the JVM side's jar
    ("service",),  # statements' locks: acquire, release, fencing, epochs, sessions
    ("spark",),  # the Spark side: session builder, py4j callback, the shim jar
    ("servers",),  # the Thrift and Connect servers
    ("cli", "submit_conf", "docs_pages", "__main__", ""),  # command line, docs, public API
)


@dataclass(frozen=True)
class Module:
    name: str  # sparklock.managers.base
    path: Path
    package: bool  # an __init__.py


def modules(root: Path = ROOT) -> dict[str, Module]:
    """Every module below ``root`` (the package directory), by dotted name."""
    out: dict[str, Module] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        package = parts[-1] == "__init__"
        if package:
            parts.pop()
        out[".".join(parts)] = Module(".".join(parts), path, package)
    return out


def imports_of(module: Module, known: Iterable[str]) -> set[str]:
    """The modules of ``known`` that ``module`` imports (``from pkg import sub``: ``pkg.sub``)."""
    known = set(known)
    tree = ast.parse(module.path.read_text(), str(module.path))
    package = module.name if module.package else module.name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known]
            targets = subs if len(subs) == len(node.names) else [target, *subs]
        else:
            continue
        for target in targets:
            while target and target not in known:  # import a.b.c of a non-module attribute
                target = target.rpartition(".")[0]
            if target and target != module.name:
                found.add(target)
    return found


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules it imports, for every module below ``root``."""
    found = modules(root)
    return {name: imports_of(m, found) for name, m in found.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(edges) + 100))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def layer_of(name: str) -> int | None:
    """The layer of a module (None: a name the layer table does not know)."""
    first = name.split(".")[1] if "." in name else ""
    for level, names in enumerate(LAYERS):
        if first in names:
            return level
    return None


def upward(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Arrows from a module to one of a higher layer."""
    out = []
    for src, targets in sorted(edges.items()):
        for dst in sorted(targets):
            a, b = layer_of(src), layer_of(dst)
            if a is not None and b is not None and b > a:
                out.append((src, dst))
    return out


def unlayered(edges: dict[str, set[str]]) -> list[str]:
    """Modules the layer table does not place."""
    return sorted(n for n in edges if layer_of(n) is None)


def intruders(edges: dict[str, set[str]], backend: str, allowed: Iterable[str]) -> list[str]:
    """Modules outside ``backend`` (a package name) that import its code, except ``allowed``."""
    allowed = set(allowed)
    inside = (backend, backend + ".")
    return sorted(
        f"{src} -> {dst}"
        for src, targets in edges.items()
        if not src.startswith(inside) and src not in allowed
        for dst in targets
        if dst.startswith(inside)
    )


def longest_chain(edges: dict[str, set[str]]) -> list[str]:
    """The longest path of imports (on the graph with each circle counted once per pass)."""
    best: dict[str, list[str]] = {}

    def chain(v: str, seen: frozenset[str]) -> list[str]:
        if v in best:
            return best[v]
        longest: list[str] = []
        for w in edges.get(v, ()):
            if w not in seen:
                c = chain(w, seen | {w})
                if len(c) > len(longest):
                    longest = c
        best[v] = [v, *longest]
        return best[v]

    return max((chain(v, frozenset({v})) for v in sorted(edges)), key=len, default=[])


def summary(root: Path = ROOT) -> str:
    edges = graph(root)
    packages = sum(m.package for m in modules(root).values())
    top = sorted({n.split(".")[1] for n in edges if "." in n})
    lines = [
        f"modules: {len(edges)} ({packages} packages; {len(top)} names below sparklock/: "
        + ", ".join(top)
        + ")",
        f"import arrows: {sum(len(t) for t in edges.values())}",
    ]
    found = circles(edges)
    lines.append(f"circles: {len(found)}")
    lines += ["  " + " <-> ".join(c) for c in found]
    up = upward(edges)
    lines.append(f"upward arrows: {len(up)} (unplaced modules: {len(unlayered(edges))})")
    lines += [f"  {a} -> {b}" for a, b in up]
    chain = longest_chain(edges)
    lines.append(f"longest import chain: {len(chain)} modules: " + " -> ".join(chain))
    return "\n".join(lines)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    where = Path(args[0]) if args else ROOT
    print(summary(where))
    if "--edges" in sys.argv:
        for src, targets in sorted(graph(where).items()):
            print(f"{src} -> {' '.join(sorted(targets))}")
