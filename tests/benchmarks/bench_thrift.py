"""Benchmark: statement overhead through the sparklock Thrift server, locked vs unlocked.

One ``python -m sparklock thriftserver`` on a ZooKeeper of its own (loopback), driven by JDBC
sessions in one JVM (``tests/support/JdbcLoad.java``, hive-jdbc from the pyspark jars). Each
session runs a point read and an INSERT of its own table round after round, unlocked
(``SET spark.sparklock.enabled=false`` in the session: the shim passes straight through) and
locked (ZooKeeper manager), with 1 and 16 concurrent sessions. Figures: median and p90 latency
per statement, as the JDBC client sees it (round trip included); a warm-up pass runs first and
the first round of each session is not timed. The machine's other load shows: run it quiet.

    python3 -m tests.benchmarks.bench_thrift [--quick]
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from tests.support import jdbc_client
from tests.support.servers import ServerProcess, beeline

from .common import bench_main, print_table, zookeeper

SESSION_COUNTS = (1, 16)
ROUNDS = 30
QUICK_ROUNDS = 8
STATEMENTS = ("SELECT count(*) FROM b$N WHERE a = 1", "INSERT INTO b$N VALUES (1)")


def run(quick: bool = False) -> None:
    rounds = QUICK_ROUNDS if quick else ROUNDS
    with zookeeper() as zk, tempfile.TemporaryDirectory(prefix="sparklock-bench-thrift-") as tmp:
        conf = {
            "spark.sparklock.manager": "zookeeper",
            "spark.sparklock.zookeeper.quorum": zk.address,
            "spark.sparklock.zookeeper.namespace": "bench_thrift",
            "spark.ui.enabled": "false",
        }
        srv = ServerProcess("thriftserver", conf, Path(tmp))
        try:
            srv.wait_ready()
            create = "; ".join(
                f"CREATE TABLE b{i} (a INT) USING parquet" for i in range(max(SESSION_COUNTS))
            )
            assert beeline(srv.port, "admin", create).returncode == 0
            url = f"jdbc:hive2://127.0.0.1:{srv.port}/default"
            # warm-up (JIT, first-statement costs, catalog caches), not reported
            jdbc_client.run("bench", url, str(max(SESSION_COUNTS)), "3", *STATEMENTS)
            rows = []
            for sessions in SESSION_COUNTS:
                for mode, enabled in (("unlocked", "false"), ("locked (zookeeper)", "true")):
                    lines = jdbc_client.run(
                        "bench",
                        url,
                        str(sessions),
                        str(rounds),
                        f"SET spark.sparklock.enabled={enabled}",
                        *STATEMENTS,
                    )
                    lat = next(ln for ln in lines if ln[0] == "LATENCY_MS")
                    errors = [ln for ln in lines if ln[0] == "ERRORS"]
                    rows.append([sessions, mode, lat[1], lat[2], lat[3], errors or ""])
        finally:
            srv.terminate()
    print_table(
        f"Thrift server statement latency, ms ({rounds} rounds of a point read + an INSERT "
        "per session)",
        ["sessions", "mode", "p50", "p90", "statements", "errors"],
        rows,
    )


if __name__ == "__main__":
    bench_main(run, __doc__)
