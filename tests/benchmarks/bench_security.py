"""What ZooKeeper security costs: lock + unlock latency, plain vs TLS vs credentials and ACLs.

One ZooKeeper serving both its plain port and TLS (client certificates required), with SASL
DIGEST-MD5 users; each configuration gets its own sparklock manager (its own connection) and
namespace, and all run in one process, round-robin, so that the machine's load hits them alike.
Figures are medians; ratios are against the plain, open configuration of the same run. Also:
the first connection of each configuration, and how long an untrusted server certificate takes
to be refused (a fixed 60 s connection timeout it must not wait for).

    python3 -m tests.benchmarks.bench_security [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from sparklock.config import SparkLockConfig
from sparklock.errors import LockManagerUnavailableError
from sparklock.locks.model import LockMode, LockRequest
from sparklock.locks.objects import LockObject
from sparklock.managers.zookeeper import ZooKeeperLockManager
from tests.support.zk_security import SASL_PROVIDER, make_certificates, tls_server

SIZES = (1, 10, 100)


def statement(n: int) -> list[LockRequest]:
    """A write of N partitions: SHARED on the table, EXCLUSIVE on each partition."""
    requests = [LockRequest(LockObject.of_table("bench", "t"), LockMode.SHARED)]
    requests += [
        LockRequest(LockObject.of_partition("bench", "t", {"p": f"{i:05d}"}), LockMode.EXCLUSIVE)
        for i in range(n)
    ]
    return requests


def configurations(server, certs) -> dict[str, dict[str, str]]:
    tls = {
        "spark.sparklock.zookeeper.quorum": f"localhost:{server.secure_port}",
        "spark.sparklock.zookeeper.ssl.enabled": "true",
        "spark.sparklock.zookeeper.ssl.ca": str(certs.ca),
        "spark.sparklock.zookeeper.ssl.certFile": str(certs.client_cert),
        "spark.sparklock.zookeeper.ssl.keyFile": str(certs.client_key),
    }
    digest = {
        "spark.sparklock.zookeeper.auth": "digest:alice",
        "spark.sparklock.zookeeper.auth.password": "alice-pw",
        "spark.sparklock.zookeeper.acl": "creator",
    }
    sasl = {
        "spark.sparklock.zookeeper.auth": "sasl:DIGEST-MD5:alice",
        "spark.sparklock.zookeeper.auth.password": "alice-sasl",
        "spark.sparklock.zookeeper.acl": "creator",
    }
    plain = {"spark.sparklock.zookeeper.quorum": server.address}
    return {
        "plain, open": plain,
        "digest + creator": {**plain, **digest},
        "SASL + creator": {**plain, **sasl},
        "TLS (mutual), open": tls,
        "TLS + digest + creator": {**tls, **digest},
    }


def manager_for(name: str, conf: dict[str, str]) -> ZooKeeperLockManager:
    full = {
        "spark.sparklock.manager": "zookeeper",
        "spark.sparklock.zookeeper.namespace": "bench_" + "".join(c for c in name if c.isalnum()),
        "spark.sparklock.zookeeper.connectionTimeout": "60s",
        **conf,
    }
    return ZooKeeperLockManager(SparkLockConfig.from_conf(full))


def run(quick: bool = False) -> None:
    """Entry of ``python3 -m tests.benchmarks.run security``."""
    main(["--quick"] if quick else [])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    rounds = 5 if parser.parse_args(argv).quick else 30
    root = Path(tempfile.mkdtemp(prefix="sparklock-bench-security-"))
    certs = make_certificates(root / "certs", "DNS:localhost")
    jaas = root / "jaas.conf"
    jaas.write_text(
        "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
        '  user_alice="alice-sasl";\n};\n'
    )
    server = tls_server(certs)
    server.extra_config.append(f"authProvider.1={SASL_PROVIDER}")
    server.jvm_options.append(f"-Djava.security.auth.login.config={jaas}")
    server.start()
    managers: dict[str, ZooKeeperLockManager] = {}
    try:
        print("first connection (connect, authenticate, one request):")
        for name, conf in configurations(server, certs).items():
            manager = managers[name] = manager_for(name, conf)
            started = time.perf_counter()
            manager.shared_client.ensure_started()
            print(f"  {name:<24} {1000 * (time.perf_counter() - started):7.1f} ms")
        untrusted = {**configurations(server, certs)["TLS (mutual), open"]}
        untrusted["spark.sparklock.zookeeper.ssl.ca"] = str(certs.other_ca)
        refused = manager_for("untrusted", untrusted)
        started = time.perf_counter()
        try:
            refused.shared_client.ensure_started()
        except LockManagerUnavailableError:
            pass
        finally:
            refused.close()
        took = time.perf_counter() - started
        print(f"  {'untrusted certificate':<24} {1000 * took:7.1f} ms to LOCK_MANAGER_UNAVAILABLE")
        print(f"  (connection timeout 60 s: refused {60 / took:.0f}x sooner than a time-out)\n")

        times: dict[tuple[str, int], list[float]] = {}
        for n in SIZES:
            for i in range(rounds + 1):  # round-robin; the first round is warm-up
                for name, manager in managers.items():
                    started = time.perf_counter()
                    held = manager.acquire(statement(n), owner="bench", query_id=f"q{i}")
                    manager.release(held)
                    if i:
                        times.setdefault((name, n), []).append(time.perf_counter() - started)
        print(f"lock + unlock, median of {rounds} rounds, ms (ratio to plain, open):")
        print(f"  {'configuration':<24}" + "".join(f"{f'N={n}':>20}" for n in SIZES))
        base = {n: statistics.median(times[("plain, open", n)]) for n in SIZES}
        for name in managers:
            cells = []
            for n in SIZES:
                ms = statistics.median(times[(name, n)])
                cells.append(f"{1000 * ms:>11.2f} ({ms / base[n]:4.2f}x)")
            print(f"  {name:<24}" + "".join(f"{c:>20}" for c in cells))
    finally:
        for manager in managers.values():
            manager.close()
        server.cleanup()


if __name__ == "__main__":
    main()
