"""A real standalone Hive metastore on loopback, for the metastore lock manager's tests.

Hive's own release from Maven Central: ``mvn`` resolves the server's runtime class path from a
generated pom (``dependency:copy-dependencies``) and fetches its binary tarball for the schema
scripts; Hive's schema tool then creates the schema once in a PostgreSQL cluster
(:mod:`tests.support.postgres`, why not Derby is said there). All of it is cached under
``~/.cache/sparklock/hive-metastore/<version>/`` (and ``~/.m2``): a second run downloads nothing
and copies the initialised cluster instead of running the schema tool again.

Each :class:`MetastoreServer` is a separate JVM on its own copy of the database, its lock API
live (``hive.support.concurrency``, ``DbTxnManager``) and its housekeeper expiring locks whose
heartbeats stopped after ``metastore.txn.timeout``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from sparklock.managers.zookeeper.local_server import free_port
from tests.support import postgres

MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
SCHEMA_TOOL = "org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool"
HADOOP_VERSION = "3.3.6"  # the version Hive 4.0.x builds against (Hive marks Hadoop "provided")
POSTGRES_JDBC = "org.postgresql:postgresql:42.7.4"
DATABASE = "metastore"


@dataclass(frozen=True)
class HiveRelease:
    """Where one Hive metastore release lives on Maven Central."""

    version: str
    artifact: str  # org.apache.hive:<artifact>:<version> (jar and -bin.tar.gz)
    dist_root: str  # the tarball's top directory

    @property
    def coordinates(self) -> str:
        return f"org.apache.hive:{self.artifact}:{self.version}"


RELEASES = {
    "4.0.1": HiveRelease(
        "4.0.1", "hive-standalone-metastore-server", "apache-hive-metastore-4.0.1-bin"
    ),
}
DEFAULT_VERSION = "4.0.1"

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>sparklock.test</groupId><artifactId>hive-metastore-runtime</artifactId>
  <version>1</version><packaging>pom</packaging>
  <dependencies>
{dependencies}
  </dependencies>
</project>
"""
# Hadoop's and Hive's poms drag in things a loopback metastore never loads, one of them a JDK 8
# tools.jar that does not exist on JDK 17.
_EXCLUDE = [
    "jdk.tools:jdk.tools",
    "org.apache.zookeeper:*",
    "org.slf4j:slf4j-log4j12",
    "org.slf4j:slf4j-reload4j",
    "ch.qos.reload4j:*",
    "log4j:*",
]


def _dependency(coordinates: str, exclude: list[str]) -> str:
    group, artifact, version = coordinates.split(":")
    rules = "".join(
        f"<exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>"
        for g, a in (e.split(":") for e in exclude)
    )
    return (
        f"    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
        f"<version>{version}</version><exclusions>{rules}</exclusions></dependency>"
    )


def runtime_pom(release: HiveRelease) -> str:
    """The pom whose runtime dependencies are the metastore's class path: the server without the
    Hadoop it marks optional, plus the Hadoop it is built against (common; hdfs for the lock
    path's snapshot-aware file checks)."""
    deps = [
        _dependency(release.coordinates, _EXCLUDE + ["org.apache.hadoop:*"]),
        _dependency(f"org.apache.hadoop:hadoop-common:{HADOOP_VERSION}", _EXCLUDE),
        _dependency(f"org.apache.hadoop:hadoop-hdfs:{HADOOP_VERSION}", _EXCLUDE),
        _dependency(POSTGRES_JDBC, []),
    ]
    return _POM.format(dependencies="\n".join(deps))


def cache_root() -> Path:
    base = os.environ.get("SPARKLOCK_METASTORE_CACHE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg or Path.home() / ".cache") / "sparklock" / "hive-metastore"


def missing_requirements() -> str | None:
    """Why no metastore can be started here (for ``pytest.skip``), or None."""
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            return f"{tool} not on PATH"
    return postgres.missing_requirements()


@contextmanager
def _exclusive(path: Path):
    """One builder at a time per cache directory (parallel test runs share the cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _mvn(args: list[str], cwd: Path) -> None:
    proc = subprocess.run(
        ["mvn", "-q", "-B", *args], cwd=cwd, capture_output=True, text=True, timeout=900
    )
    if proc.returncode != 0:
        raise RuntimeError(f"mvn {' '.join(args)} failed:\n{proc.stdout[-4000:]}{proc.stderr}")


def install(version: str = DEFAULT_VERSION) -> Path:
    """The release's home (``lib/``, ``scripts/``, ``pg-template/``), built once."""
    release = RELEASES[version]
    home = cache_root() / version
    done = home / ".complete"
    if done.exists():
        return home
    with _exclusive(cache_root() / f".{version}.lock"):
        if done.exists():
            return home
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        (home / "pom.xml").write_text(runtime_pom(release))
        _mvn(["dependency:copy-dependencies", "-DoutputDirectory=lib", "-DincludeScope=runtime"],
             home)  # fmt: skip
        _mvn(
            [
                "dependency:copy",
                f"-Dartifact={release.coordinates}:tar.gz:bin",
                "-DoutputDirectory=dist",
            ],
            home,
        )
        _extract_scripts(home / "dist" / f"{release.artifact}-{version}-bin.tar.gz", release, home)
        shutil.rmtree(home / "dist")
        _init_schema(home)
        done.write_text(version)
    return home


def _extract_scripts(tarball: Path, release: HiveRelease, home: Path) -> None:
    """Hive's PostgreSQL schema scripts (the schema tool reads them from the release's home)."""
    prefix = f"{release.dist_root}/scripts/metastore/upgrade/postgres/"
    target = home / "scripts" / "metastore" / "upgrade" / "postgres"
    target.mkdir(parents=True)
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.startswith(prefix):
                (target / Path(member.name).name).write_bytes(tar.extractfile(member).read())


def _init_schema(home: Path) -> None:
    """Create the metastore schema with Hive's own schema tool; keep the cluster as template."""
    pg = postgres.PostgresServer().start()
    try:
        pg.psql(f"CREATE DATABASE {DATABASE}")
        conf = home / "schema-conf"
        write_site(conf, pg.jdbc_url(DATABASE), home / "warehouse", port=0, txn_timeout="300s")
        env = {**os.environ, "METASTORE_HOME": str(home)}
        proc = subprocess.run(
            ["java", "-Xmx512m", "-cp", f"{conf}:{home / 'lib'}/*", SCHEMA_TOOL,
             "-initSchema", "-dbType", "postgres"],
            cwd=home, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        if proc.returncode != 0 or "Initialization script completed" not in proc.stdout:
            raise RuntimeError(f"schema tool failed:\n{proc.stdout[-4000:]}{proc.stderr[-4000:]}")
        shutil.rmtree(conf)
        pg.save(home / "pg-template")
    finally:
        pg.cleanup()


def write_site(conf: Path, jdbc_url: str, warehouse: Path, *, port: int, txn_timeout: str) -> None:
    """``metastore-site.xml``: the database at ``jdbc_url``, the lock API live, locks expiring."""
    props = {
        "javax.jdo.option.ConnectionURL": jdbc_url,
        "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "javax.jdo.option.ConnectionUserName": "postgres",
        "javax.jdo.option.ConnectionPassword": "",
        "metastore.warehouse.dir": str(warehouse),
        "metastore.thrift.port": str(port),
        "metastore.thrift.bind.host": "127.0.0.1",
        "hive.support.concurrency": "true",
        "hive.txn.manager": "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager",
        "metastore.txn.timeout": txn_timeout,
        # the housekeeper is what expires locks whose heartbeats stopped
        "metastore.housekeeping.threads.on": "true",
        "metastore.acid.housekeeper.interval": "1s",
        "metastore.compactor.initiator.on": "false",
        "metastore.schema.verification": "true",
    }
    rows = "".join(
        f"<property><name>{k}</name><value>{escape(v)}</value></property>\n"
        for k, v in props.items()
    )
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "metastore-site.xml").write_text(f"<configuration>\n{rows}</configuration>\n")


class MetastoreServer:
    """One standalone Hive metastore JVM on 127.0.0.1 with a private copy of the database."""

    def __init__(self, version: str = DEFAULT_VERSION, *, txn_timeout: str = "10s") -> None:
        self.version = version
        self.txn_timeout = txn_timeout
        self.root = Path(tempfile.mkdtemp(prefix="sparklock-hms-"))
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.db: postgres.PostgresServer | None = None

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    def start(self, timeout: float = 120.0) -> MetastoreServer:
        home = install(self.version)
        self.db = postgres.PostgresServer(home / "pg-template").start()
        self.warehouse.mkdir()
        self.port = free_port()
        conf = self.root / "conf"
        write_site(conf, self.db.jdbc_url(DATABASE), self.warehouse, port=self.port,
                   txn_timeout=self.txn_timeout)  # fmt: skip
        self.log = self.root / "metastore.log"
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                [
                    "java",
                    "-Xmx512m",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    "-cp",
                    f"{conf}:{home / 'lib'}/*",
                    MAIN_CLASS,
                ],
                cwd=self.root,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "METASTORE_HOME": str(home)},
            )
        self._wait_serving(timeout)
        return self

    def _wait_serving(self, timeout: float) -> None:
        """Until the port accepts and the metastore answers a call (its schema is loaded)."""
        from sparklock.managers.metastore.client import MetastoreClient

        deadline = time.monotonic() + timeout
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"metastore exited:\n{self.log.read_text()[-4000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            except OSError:
                pass
            else:
                with MetastoreClient([self.uri], timeout=30.0) as client:
                    client.config_value("metastore.txn.timeout", "")
                return
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"metastore did not answer in {timeout:.0f} s")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self.proc = None

    def cleanup(self) -> None:
        self.stop()
        if self.db is not None:
            self.db.cleanup()
        if self.port:  # the last server's log stays for a look after a failed run
            shutil.copy(self.log, cache_root() / "last-metastore.log")
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> MetastoreServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.cleanup()
