"""A server that has already served a client keeps serving: after one session closed, a new one
runs the statements whose locks need shim classes nobody loaded yet (CTAS, a path write, a
partitioned CREATE TABLE). A HiveServer2 session's close closes the class loader holding the
``spark.jars`` entries, so the shim must be on the driver's own class path.

Real clients: PyHive and the JDBC driver from the pyspark jars (beeline) for the Thrift server,
the pyspark Connect client for the Connect server; each server with and without Hive support."""

from __future__ import annotations

import os

import pytest

from tests.support.servers import ServerProcess, beeline
from tests.support.spark_versions import needs_spark

pytestmark = pytest.mark.spark  # a Spark driver (the server): runs on every Spark version

CONF = {"spark.ui.enabled": "false"}


def statements(out_dir: str) -> list[str]:
    """Each needs shim classes that a plain ``SELECT 1`` never loads."""
    return [
        "CREATE TABLE ct USING parquet AS SELECT 1 AS id",
        f"INSERT OVERWRITE DIRECTORY '{out_dir}' USING parquet SELECT 1 AS id",
        "CREATE TABLE pt (a INT, p STRING) USING parquet PARTITIONED BY (p)",
        "INSERT INTO pt PARTITION (p = 'x') VALUES (1)",
    ]


def pyhive_connect(port: int, user: str):
    hive = pytest.importorskip("pyhive.hive", reason="PyHive comes with the dev extra (.[dev])")
    return hive.connect(host="127.0.0.1", port=port, username=user, database="default")


@pytest.mark.parametrize("hive", [False, True], ids=["in-memory-catalog", "hive"])
def test_thrift_second_session_after_first_closed(hive, tmp_path):
    user_classes = str(tmp_path / "user-classes")  # the user's own entry stays in front
    conf = {**CONF, "spark.driver.extraClassPath": user_classes}
    srv = ServerProcess("thriftserver", conf, tmp_path, *(["--hive"] if hive else []))
    try:
        srv.wait_ready()
        first = pyhive_connect(srv.port, "first")
        cursor = first.cursor()
        cursor.execute("SELECT 1")
        assert cursor.fetchall() == [(1,)]
        cursor.execute("SET spark.driver.extraClassPath")
        [(_, classpath)] = cursor.fetchall()
        assert classpath.split(os.pathsep)[0] == user_classes
        assert classpath.endswith("sparklock-shim.jar"), classpath
        first.close()
        # JDBC sessions (hive-jdbc from the pyspark jars), each closed as beeline exits
        assert beeline(srv.port, "jdbc", "SELECT 1").returncode == 0
        ctas, path_write, *rest = statements(str(tmp_path / "out"))
        done = beeline(srv.port, "jdbc", f"{ctas}; {path_write}")
        assert done.returncode == 0, done.stderr[-3000:]
        second = pyhive_connect(srv.port, "second")
        cursor = second.cursor()
        for sql in rest:
            cursor.execute(sql)
        cursor.execute("SELECT count(*) FROM ct")
        assert cursor.fetchall() == [(1,)]
        cursor.execute("SELECT a, p FROM pt")
        assert cursor.fetchall() == [(1, "x")]
        second.close()
        assert list((tmp_path / "out").glob("*.parquet"))
    finally:
        assert srv.terminate() == 0, srv.log_tail()


@needs_spark((4, 0), "a Spark Connect server in the pyspark wheel (spark-connect_*.jar)")
@pytest.mark.parametrize("hive", [False, True], ids=["in-memory-catalog", "hive"])
def test_connect_second_session_after_first_closed(hive, tmp_path):
    pytest.importorskip("grpc", reason="the Connect client needs the connect extra (.[connect])")
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    conf = {**CONF, **({"spark.sql.catalogImplementation": "hive"} if hive else {})}
    srv = ServerProcess("connect-server", conf, tmp_path)
    try:
        srv.wait_ready()
        first = RemoteSession.builder.remote(f"{srv.url}/;user_id=first").create()
        assert first.sql("SELECT 1 AS one").collect()[0].one == 1
        catalog = first.conf.get("spark.sql.catalogImplementation")
        assert catalog == ("hive" if hive else "in-memory")
        first.stop()
        second = RemoteSession.builder.remote(f"{srv.url}/;user_id=second").create()
        for sql in statements(str(tmp_path / "out")):
            second.sql(sql).collect()
        assert second.sql("SELECT count(*) AS n FROM ct").collect()[0].n == 1
        assert [tuple(r) for r in second.sql("SELECT a, p FROM pt").collect()] == [(1, "x")]
        second.stop()
        assert list((tmp_path / "out").glob("*.parquet"))
    finally:
        assert srv.terminate() == 0, srv.log_tail()
