"""A Connect session's locks name its client's address, not the server's (issue 15 gap): the
shim's gRPC interceptor records the peer of each Connect session.

The server binds 127.0.0.1, and this machine's own address is 127.0.0.1 too, so the real pyspark
client reaches the server through a plain TCP forwarder that connects from 127.0.0.2 (another
loopback address): the server sees a client at 127.0.0.2, as it would a client on another host.
"""

from __future__ import annotations

import pytest

from tests.support.servers import ServerProcess
from tests.support.spark_versions import needs_spark
from tests.support.tcp_proxy import TcpProxy
from tests.test_thriftserver import lock_nodes, server_conf

pytestmark = [
    pytest.mark.spark,
    needs_spark((4, 0), "a Spark Connect server in the pyspark wheel (spark-connect_*.jar)"),
]

pytest.importorskip("grpc", reason="the Connect client needs the connect extra (.[connect])")
pytest.importorskip("pyarrow", reason="the Connect client needs the connect extra (.[connect])")

from pyspark.sql.connect.session import SparkSession as RemoteSession  # noqa: E402

NAMESPACE = "sparklock_connect_client"
CLIENT_ADDRESS = "127.0.0.2"


@pytest.fixture(scope="module")
def server(zk_server, tmp_path_factory):
    srv = ServerProcess(
        "connect-server", server_conf(zk_server, NAMESPACE), tmp_path_factory.mktemp("connect_ip")
    )
    srv.wait_ready()
    yield srv
    assert srv.terminate() == 0, srv.log_tail()


def test_locks_name_the_connect_clients_address(server, zk):
    forwarder = TcpProxy("127.0.0.1", server.port, source=CLIENT_ADDRESS)
    direct = RemoteSession.builder.remote(f"sc://127.0.0.1:{server.port}/;user_id=dan").create()
    remote = RemoteSession.builder.remote(
        f"sc://127.0.0.1:{forwarder.port}/;user_id=carol"
    ).create()
    try:
        remote.sql("CREATE TABLE ct (a INT) USING parquet")
        remote.sql("LOCK TABLE ct EXCLUSIVE")
        direct.sql("CREATE TABLE dt (a INT) USING parquet")
        direct.sql("LOCK TABLE dt SHARED")
        shown = {
            r["name"]: (r["user"], r["client"]) for r in direct.sql("SHOW LOCKS EXTENDED").collect()
        }
        assert shown == {
            "default@ct": ("carol", CLIENT_ADDRESS),  # not the server's 127.0.0.1
            "default@dt": ("dan", "127.0.0.1"),
        }
        clients = sorted(d.split(":")[4] for _, d in lock_nodes(zk, NAMESPACE))
        assert clients == ["127.0.0.1", CLIENT_ADDRESS]  # the lock data's client field
        remote.sql("UNLOCK TABLE ct")
        direct.sql("UNLOCK TABLE dt")
    finally:
        remote.stop()
        direct.stop()
        forwarder.cut()
