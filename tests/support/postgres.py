"""A private PostgreSQL server on loopback (Debian's ``postgresql`` package) for the metastore.

Why not the metastore's embedded Derby: Hive's transaction handler serialises Derby access with
a JVM lock while holding Derby row locks, and concurrent lock calls (two drivers, a queued writer
behind readers) stall there for seconds at a time. PostgreSQL is what Hive shops run it on.

Each server is a copy of a data directory made once (``initdb`` plus whatever the caller put in
it, e.g. the metastore schema): starting one takes a second. Run as root, the server runs as the
``postgres`` user, as PostgreSQL requires.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from sparklock.managers.zookeeper.local_server import free_port


def bin_dir() -> Path | None:
    """The newest installed PostgreSQL's programs, if any."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: p.split("/")[4])
    return Path(found[-1]).parent if found else None


def missing_requirements() -> str | None:
    if bin_dir() is None:
        return "PostgreSQL not installed (Debian's postgresql package)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root without a postgres user to run PostgreSQL as"
    return None


def _runs_as() -> tuple[int, int] | None:
    """PostgreSQL refuses to run as root: the ``postgres`` user's ids then."""
    if os.geteuid() != 0:
        return None
    entry = pwd.getpwnam("postgres")
    return entry.pw_uid, entry.pw_gid


def _as_owner(ids: tuple[int, int] | None):
    if ids is None:
        return None

    def demote() -> None:
        os.setgid(ids[1])
        os.setuid(ids[0])

    return demote


def _chown_tree(path: Path, ids: tuple[int, int] | None) -> None:
    if ids is None:
        return
    for root, _dirs, files in os.walk(path):
        os.chown(root, *ids)
        for name in files:
            os.chown(os.path.join(root, name), *ids)


class PostgresServer:
    """One PostgreSQL cluster in a temporary directory, listening on 127.0.0.1 only."""

    def __init__(self, template: Path | None = None) -> None:
        self.template = template
        self.root = Path(tempfile.mkdtemp(prefix="sparklock-pg-"))
        self.data = self.root / "data"
        self.port = 0
        self.ids = _runs_as()

    def _run(self, *args: str, timeout: float = 120) -> str:
        proc = subprocess.run(
            [str(bin_dir() / args[0]), *args[1:]],
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=_as_owner(self.ids),
            cwd=self.root,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{args[0]} failed:\n{proc.stdout}{proc.stderr}")
        return proc.stdout

    def start(self) -> PostgresServer:
        if self.template is not None:
            shutil.copytree(self.template, self.data, symlinks=True)
        _chown_tree(self.root, self.ids)
        if self.template is None:
            self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                      "-E", "UTF8")  # fmt: skip
        self.port = free_port()
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "pg.log"),
                  "-w", "start")  # fmt: skip
        return self

    def psql(self, sql: str, database: str = "postgres") -> str:
        return self._run("psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                         "-d", database, "-v", "ON_ERROR_STOP=1", "-Atc", sql)  # fmt: skip

    def jdbc_url(self, database: str) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        if self.port and (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def save(self, target: Path) -> None:
        """Stop cleanly and keep the data directory as a template for later servers."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        tmp = target.with_name(target.name + f".tmp{os.getpid()}")
        shutil.copytree(self.data, tmp, symlinks=True)
        for leftover in ("postmaster.pid", "postmaster.opts"):
            (tmp / leftover).unlink(missing_ok=True)
        tmp.rename(target)

    def cleanup(self) -> None:
        try:
            self.stop()
        finally:
            time.sleep(0)  # the server's files are gone with the directory
            shutil.rmtree(self.root, ignore_errors=True)
