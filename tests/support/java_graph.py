"""The JVM shim's type graph, read from the Java sources with a small tokenizer (no javac): which
class names which, and so which package depends on which.

``python3 -m tests.support.java_graph [--edges]`` prints the figures (packages, classes, the
largest strongly connected group, package arrows); ``tests/test_java_structure.py`` holds the
rules. A class is a top-level type (one per file); the compat variants of one class (a Spark or
Scala line each) count as one node with the union of their references, since any of them may be
the one compiled. A reference is an ``import`` of a shim class, a fully qualified name in the
code, or a same-package class's simple name anywhere outside comments and string literals.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "jvm-shim" / "src"
ROOT_PACKAGE = "io.sparklock.shim"

#: Packages of plain data (records, messages, conditions): they may name the JDK's and Spark's
#: types but no other shim package, so both wings read them without pulling in behaviour.
DATA_PACKAGES = frozenset({f"{ROOT_PACKAGE}.wire"})

_COMMENT_OR_LITERAL = re.compile(
    r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])'""", re.DOTALL
)
_TEXT_BLOCK = re.compile(r'""".*?"""', re.DOTALL)
_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)\s*;", re.MULTILINE)
_IMPORT = re.compile(r"^\s*import\s+(static\s+)?([\w.]+)(\.\*)?\s*;", re.MULTILINE)
_QUALIFIED = re.compile(re.escape(ROOT_PACKAGE) + r"(?:\.[a-z_]\w*)*\.[A-Z]\w*")
_WORD = re.compile(r"[A-Za-z_$][\w$]*")


def java_files(src: Path = SRC) -> list[Path]:
    """Every Java source of the shim: the main tree, each compat variant, the Delta source set."""
    return sorted(src.rglob("*.java"))


def strip(text: str) -> str:
    """The code without comments and string/char literals (their words are not references)."""
    return _COMMENT_OR_LITERAL.sub(" ", _TEXT_BLOCK.sub(" ", text))


def parse(text: str, class_name: str) -> tuple[str, str, set[str], set[str], set[str]]:
    """(full class name, package, imported shim classes, wildcard-imported packages, words)."""
    code = strip(text)
    found = _PACKAGE.search(code)
    package = found.group(1) if found else ""
    imported: set[str] = set()
    wildcards: set[str] = set()
    for static, name, star in _IMPORT.findall(code):
        if not name.startswith(ROOT_PACKAGE + "."):
            continue
        if star and not static:
            wildcards.add(name)
            continue
        parts = name.split(".")
        # the class is the first capitalised part (static imports name a member after it)
        upper = next((i for i, p in enumerate(parts) if p[:1].isupper()), len(parts) - 1)
        imported.add(".".join(parts[: upper + 1]))
    body = _IMPORT.sub(" ", _PACKAGE.sub(" ", code))
    imported |= set(_QUALIFIED.findall(body))
    return f"{package}.{class_name}", package, imported, wildcards, set(_WORD.findall(body))


def graph_of(sources: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    """Class -> the shim classes it names, from ``(file stem, source text)`` pairs."""
    parsed = [parse(text, stem) for stem, text in sources]
    by_package: dict[str, set[str]] = {}
    for name, package, *_ in parsed:
        by_package.setdefault(package, set()).add(name)
    edges: dict[str, set[str]] = {}
    for name, package, imported, wildcards, words in parsed:
        out = edges.setdefault(name, set())
        visible = set(by_package.get(package, ()))
        for pkg in wildcards:
            visible |= by_package.get(pkg, set())
        out |= {c for c in visible if c.rpartition(".")[2] in words}
        out |= {c for c in imported if c in {n for n, *_ in parsed}}
        out.discard(name)
    return edges


def graph(src: Path = SRC) -> dict[str, set[str]]:
    """Class -> the shim classes it names, for every Java source under ``src``."""
    return graph_of((p.stem, p.read_text(encoding="utf-8")) for p in java_files(src))


def package_of(name: str) -> str:
    return name.rpartition(".")[0]


def package_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """Package -> the other packages its classes name."""
    out: dict[str, set[str]] = {}
    for name, targets in edges.items():
        pkg = package_of(name)
        out.setdefault(pkg, set()).update(package_of(t) for t in targets if package_of(t) != pkg)
    return out


def groups(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan, iterative), largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
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
    return sorted(out, key=lambda g: (-len(g), g))


def package_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Groups of packages that name each other, directly or round a loop."""
    return groups(package_graph(edges))


def cross_package_class_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Class loops that leave their package: a strongly connected group spanning packages."""
    return [g for g in groups(edges) if len({package_of(c) for c in g}) > 1]


def impure_data(edges: dict[str, set[str]], data: Iterable[str] = DATA_PACKAGES) -> list[str]:
    """Arrows out of a data package into another shim package, as ``class -> class``."""
    data = set(data)
    return sorted(
        f"{c} -> {t}"
        for c, targets in edges.items()
        if package_of(c) in data
        for t in targets
        if package_of(t) != package_of(c)
    )


def main(argv: list[str]) -> int:
    edges = graph()
    packages = package_graph(edges)
    largest = max((len(g) for g in groups(edges)), default=1)
    print(f"classes: {len(edges)}  packages: {len(packages)}")
    print(f"largest strongly connected group of classes: {largest}")
    print(f"package cycles: {package_cycles(edges)}")
    print(f"cross-package class cycles: {len(cross_package_class_cycles(edges))}")
    print(f"data packages naming others: {impure_data(edges)}")
    if "--edges" in argv:
        for pkg in sorted(packages):
            print(f"{pkg} -> {', '.join(sorted(packages[pkg])) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
