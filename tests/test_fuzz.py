"""Bad input: hypothesis fuzz of the name escaping and of the lock statements through real Spark.

* Names (no Spark, 300 examples): any database/table/partition spec either raises
  ``InvalidObjectError`` or maps to znode components that stay inside their own node (no ``/``,
  not ``.``/``..``, nothing ZooKeeper refuses, at most 1024 characters), that a real ZooKeeper
  accepts at exactly that depth, and that read back (``object_from_components``) give the same
  object; ``LockObject.parse`` of the display name gives it back or refuses -- never another
  object.
* Statements (a local Spark session on the ZooKeeper manager, 60 examples each): LOCK / SHOW
  LOCKS / UNLOCK of a table and partition with generated identifiers and partition values either
  work on exactly the right object or fail with a parse/analysis/documented sparklock error;
  random text after ``LOCK TABLE``/``UNLOCK TABLE``/``SHOW LOCKS`` never locks anything. After
  every example the ZooKeeper tree holds nothing outside the object's own path.
"""

from __future__ import annotations

import os
import re
import time

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from kazoo.client import KazooClient

from sparklock.errors import InvalidObjectError
from sparklock.locks.objects import MAX_COMPONENT_LENGTH, LockObject
from sparklock.managers.zookeeper.layout import object_from_components, object_path
from tests.support.spark import SparkSpec
from tests.support.zk_tree import inspecting, relative, znodes

NAME_EXAMPLES = int(os.environ.get("SPARKLOCK_FUZZ_NAMES", "300"))
STATEMENT_EXAMPLES = int(os.environ.get("SPARKLOCK_FUZZ_STATEMENTS", "60"))

#: Characters ZooKeeper's PathUtils.validatePath refuses in a path component.
_ZK_BAD = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\uf8ff\ufff0-\uffff]")

# Text with the characters that matter over-represented: separators, dots, percent escapes,
# controls, the ZooKeeper-forbidden ranges, lone surrogates, and case-changing letters.
_special = st.sampled_from(
    list("/.@=%:\\'\"#*?[]^{}\x00\x01\x1f\x7f\x80\x9f \t\n")
    + [
        "..",
        "\ud800",
        "\udfff",
        "\ue000",
        "\uf8ff",
        "\ufff0",
        "\uffff",
        "İ",
        "ẞ",
        "Σ",
        "%2F",
        "%",
        "%G1",
        "__HIVE_DEFAULT_PARTITION__",
        "_sparklock_writers",
    ]
)
_chars = st.one_of(st.characters(codec=None), _special)
name_text = st.lists(_chars, max_size=12).map("".join) | st.sampled_from(["", ".", "..", "a"])
value_text = name_text | st.none()


_NON_BMP = re.compile("[\U00010000-\U0010ffff]")


def _component_ok(comp: str) -> None:
    assert comp, "empty component"
    assert "/" not in comp
    assert comp not in (".", "..")
    assert not _ZK_BAD.search(comp), repr(comp)
    assert len(comp) <= MAX_COMPONENT_LENGTH


@pytest.fixture(scope="module")
def zk(zk_server):
    """One inspecting client for the module (hypothesis runs many examples per test)."""
    with inspecting(zk_server.address) as client:
        yield client


@settings(
    max_examples=NAME_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    database=name_text,
    table=st.none() | name_text,
    spec=st.lists(st.tuples(name_text, value_text), max_size=3),
)
def test_names_stay_inside_their_node(zk, zk_namespace, database, table, spec):
    try:
        obj = LockObject(database, table, tuple(spec))
    except InvalidObjectError:
        return
    comps = obj.components
    for c in comps:
        _component_ok(c)
    root = "/" + zk_namespace
    path = object_path(root, obj)
    assert path.split("/")[2:] == list(comps)  # exactly one level per component
    # read back from the components (what SHOW LOCKS does with the tree)
    assert object_from_components(comps) == obj
    # the display name parses back to the same object
    assert LockObject.parse(obj.name) == obj
    # a real ZooKeeper takes the path at exactly that depth
    zk.ensure_path(path)
    node = root
    for c in comps:
        assert c in zk.get_children(node)
        node = f"{node}/{c}"


_objects = st.builds(
    lambda db, table, spec: (db, table, tuple(spec)),
    st.sampled_from(["db", "d", "db-", "db\x00"]) | name_text,
    st.none() | st.sampled_from(["t", "t-", "t/"]) | name_text,
    st.lists(st.tuples(st.sampled_from(["p", "q"]) | name_text, value_text), max_size=3),
)


def _object(fields) -> LockObject | None:
    try:
        return LockObject(*fields)
    except InvalidObjectError:
        return None


@settings(max_examples=NAME_EXAMPLES, deadline=None)
@given(a=_objects, b=_objects)
def test_sort_key_orders_as_the_components_do(a, b):
    """The lock order compares one string per object: exactly the components' tuple order."""
    a, b = _object(a), _object(b)
    if a is None or b is None:
        return
    assert "\x00" not in "".join(a.components)
    assert (a.sort_key < b.sort_key) == (a.components < b.components)
    assert (a.sort_key == b.sort_key) == (a == b)


@pytest.mark.parametrize("name", ["\U00010000", "sales_\U0001f600", "\U0010ffff"])
def test_non_bmp_names_are_escaped(zk, zk_namespace, name):
    obj = LockObject.of_partition("default", "t", [("p", name)])
    for c in obj.components:
        _component_ok(c)
        assert not _NON_BMP.search(c), repr(c)
    zk.ensure_path(object_path("/" + zk_namespace, obj))


def test_at_sign_names_parse_back():
    obj = LockObject(".", "0@", ((".", None),))
    assert obj.name == "%2E@0%40@.=__HIVE_DEFAULT_PARTITION__"
    assert LockObject.parse(obj.name) == obj


# -- statements through Spark ---------------------------------------------------------------------

# session conf (a builder conf could outlive the module as a JVM system property)
SPARK = SparkSpec(
    app="fuzz",
    cores=1,
    log_level="OFF",
    zookeeper_namespace="sparklock_fuzz",
    session_conf={"spark.sparklock.lock.numRetries": "1"},
)


#: hypothesis settings of the statement tests (each example runs statements through Spark)
statement_settings = settings(
    max_examples=STATEMENT_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def lock_paths(zk: KazooClient, namespace: str) -> list[str]:
    """Every LOCK-* znode below the namespace, relative to it."""
    root = "/" + namespace
    return sorted(relative(p, root) for p in znodes(zk, root, locks_only=True))


#: What a refused statement may raise: Spark's parse/analysis errors, or the documented answer to
#: a well-formed UNLOCK of an object that holds no lock (Hive's NOT_LOCKED).
ACCEPTED = re.compile(
    r"^(ParseException|AnalysisException|IllegalArgumentException): "
    r"|^NotLockedError: NOT_LOCKED: \w+ "
)


def _refused(e: Exception) -> bool:
    """Spark's own parse/analysis refusals (lock statement errors are AnalysisExceptions whose
    text starts with a sparklock code); never a LOCK_SERVICE_* failure or an internal error."""
    text = f"{type(e).__name__}: {e}"
    event(f"refused: {type(e).__name__}: {str(e)[:40]}")
    return bool(ACCEPTED.search(text)) and "LOCK_SERVICE" not in text and "INTERNAL" not in text


def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def quote_literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


# Mostly identifiers Spark accepts (so the example reaches LOCK), sometimes anything.
_valid_ident = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,9}", fullmatch=True)
_odd_ident = st.text(
    alphabet=st.sampled_from(list("abcxyz019_") + list("AZ-.@/%: é=`$")), min_size=1, max_size=10
)
ident_text = st.one_of(_valid_ident, _valid_ident, _valid_ident, _odd_ident)
literal_text = st.lists(
    st.one_of(
        st.characters(codec="utf-8", exclude_categories=["Cs"], max_codepoint=0xFFFF),
        st.sampled_from(list("/=%.\\'\"@:\t\x01") + ["..", "__HIVE_DEFAULT_PARTITION__"]),
    ),
    max_size=12,
).map("".join)


@statement_settings
@given(
    table=ident_text,
    column=ident_text,
    value=literal_text,
    mode=st.sampled_from(["SHARED", "EXCLUSIVE"]),
)
def test_lock_statements_lock_exactly_their_object(spark, zk, table, column, value, mode):
    assume(table.lower() != column.lower())
    ns = f"sparklock_fuzz_{time.monotonic_ns()}"
    spark.conf.set("spark.sparklock.zookeeper.namespace", ns)
    t, c = quote_ident(table), quote_ident(column)
    try:
        spark.sql(f"CREATE TABLE {t} (v INT, {c} STRING) USING parquet PARTITIONED BY ({c})")
    except Exception as e:  # noqa: BLE001
        assert _refused(e), e
        assert lock_paths(zk, ns) == []
        return
    try:
        spec = f"PARTITION ({c} = {quote_literal(value)})"
        try:
            spark.sql(f"ALTER TABLE {t} ADD {spec}")
        except Exception as e:  # noqa: BLE001
            assert _refused(e), e
            spec = ""
        try:
            spark.sql(f"LOCK TABLE {t} {spec} {mode}")
        except Exception as e:  # noqa: BLE001
            assert _refused(e), e
            assert lock_paths(zk, ns) == []
            return
        rows = [(r["name"], r["mode"]) for r in spark.sql("SHOW LOCKS").collect()]
        assert len(rows) == 1 and rows[0][1] == mode, rows
        name = rows[0][0]
        if spec:
            expected = LockObject.of_partition("default", table, [(column, value)])
        else:
            expected = LockObject.of_table("default", table)
        assert name == expected.name, (name, expected.name)
        event("locked a partition" if spec else "locked a table")
        # the one lock node sits directly in the object's own node
        paths = lock_paths(zk, ns)
        assert len(paths) == 1
        assert paths[0].rsplit("/", 1)[0] == "/".join(expected.components), paths
        assert re.fullmatch(rf"LOCK-{mode}-\d{{10}}", paths[0].rsplit("/", 1)[1])
        # SHOW LOCKS of the object finds it; UNLOCK removes exactly it
        shown = spark.sql(f"SHOW LOCKS {t} {spec}").collect()
        assert [(r["name"], r["mode"]) for r in shown] == rows
        spark.sql(f"UNLOCK TABLE {t} {spec}")
        assert lock_paths(zk, ns) == []
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {t}")
        assert lock_paths(zk, ns) == []


junk = st.lists(
    st.one_of(
        st.sampled_from(
            list("`'\"();,.=@/ \t\n-*")
            + ["PARTITION", "SHARED", "EXCLUSIVE", "EXTENDED", " t ", "default", "NULL", "1", "p"]
        ),
        st.characters(codec="utf-8", exclude_categories=["Cs"]),
    ),
    max_size=20,
).map("".join)


@statement_settings
@given(
    head=st.sampled_from(["LOCK TABLE", "UNLOCK TABLE", "SHOW LOCKS", "LOCK TABLE t"]), rest=junk
)
def test_garbage_lock_statements_lock_nothing(spark, zk, head, rest):
    ns = "sparklock_fuzz_junk"
    spark.conf.set("spark.sparklock.zookeeper.namespace", ns)
    spark.sql("CREATE TABLE IF NOT EXISTS t (v INT, p STRING) USING parquet PARTITIONED BY (p)")
    try:
        spark.sql(f"{head} {rest}").collect()
    except Exception as e:  # noqa: BLE001
        assert _refused(e), e
    # whatever parsed, every lock left is on t (the only table) and UNLOCK clears it
    for path in lock_paths(zk, ns):
        assert path.startswith("default/t/") or path.startswith("default/LOCK-"), path
    for r in spark.sql("SHOW LOCKS").collect():
        obj = LockObject.parse(r["name"])
        assert obj.database == "default" and obj.table in (None, "t")
        spark.sql("UNLOCK TABLE t" if obj.table else "UNLOCK DATABASE default")
    assert lock_paths(zk, ns) == []
