"""``sparklock`` (or ``python -m sparklock``): operators' tools that need no Spark.

    sparklock locks   [--object NAME] [--waiting]      # SHOW LOCKS EXTENDED, plus alive
    sparklock release NAME                           # force-release the granted locks on NAME
                                                     # (operator override of unlock.policy)
    sparklock stale   [--older-than 24h] [--apply]   # dead owners' explicit locks
    sparklock zookeeper [--port 2181] [--data-dir D]  # a local server, development only
    sparklock thriftserver   [--host H] [--port P] [--hive] [--conf k=v]...  # servers:
    sparklock connect-server [--host H] [--port P] [--conf k=v]...           # see below

Connection settings are the Spark conf keys (``--conf spark.sparklock.zookeeper.quorum=h:2181``,
or a backend's shorthands such as ``--quorum``/``--namespace``), parsed by the same code as in
Spark, so a bad value gets the same error naming the key. The lock tools work with the backends
whose locks other processes see (``spark.sparklock.manager``, default zookeeper); each backend
may add subcommands of its own (``zookeeper``: a local development server).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Sequence

from . import help_text, submit_conf
from .config import SparkLockConfig
from .errors import SparkLockError
from .locks.model import LockInfo, LockState, LockType
from .locks.objects import LockObject
from .managers import LockManager
from .managers.registry import BACKENDS
from .protocol.messages import LOCK_COLUMNS, lock_rows
from .values import parse_duration

#: The backend the lock tools talk to unless ``--conf spark.sparklock.manager=...`` says otherwise.
DEFAULT_MANAGER = "zookeeper"


def _shorthands() -> list[tuple[str, str, str]]:
    """Every shared backend's command-line shorthands: (flag, key, help)."""
    return [o for b in BACKENDS.values() if b.shared for o in b.cli_options]


def _config(args: argparse.Namespace) -> SparkLockConfig:
    conf = {"spark.sparklock.manager": DEFAULT_MANAGER}
    for item in args.conf or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--conf takes key=value, got {item!r}")
        conf[key.strip()] = value.strip()
    for flag, key, _ in _shorthands():
        value = getattr(args, flag.lstrip("-").replace("-", "_"))
        if value:
            conf[key] = value
    config = SparkLockConfig.from_conf(conf)
    if not BACKENDS[config.manager].shared:
        raise SystemExit(
            f"spark.sparklock.manager={config.manager}: its locks live in one Spark application "
            "only; these tools work with " + ", ".join(b for b in BACKENDS if BACKENDS[b].shared)
        )
    return config


def _print_table(
    columns: Sequence[str], rows: Sequence[Sequence[str]], out, waiting: int = 0
) -> None:
    widths = [max([len(c), *(len(str(r[i])) for r in rows)]) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))
    print(line.rstrip(), file=out)
    for r in rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)).rstrip(), file=out)
    footer = f"{len(rows)} lock{'s' if len(rows) != 1 else ''}"
    print(f"({footer}, {waiting} waiting)" if waiting else f"({footer})", file=out)


def _age(info: LockInfo, now_ms: int) -> float:
    return (now_ms - info.data.lock_time_ms) / 1000.0


def cmd_locks(m: LockManager, args, out) -> int:
    obj = LockObject.parse(args.object) if args.object else None
    infos = m.list_locks(obj, waiting=True)  # waiting requests too, as SHOW LOCKS
    if args.waiting:
        infos = [i for i in infos if i.state is LockState.WAITING]
    waiting = sum(i.state is LockState.WAITING for i in infos)
    alive = m.owners_alive(infos) if infos else []
    _print_table(list(LOCK_COLUMNS), lock_rows(infos, list(LOCK_COLUMNS), alive), out, waiting)
    return 0


#: What ``release`` says of itself: the operator's override of who may UNLOCK.
RELEASE_OVERRIDE = (
    "operator override: spark.sparklock.unlock.policy does not apply to this command; "
    "it removes the locks whoever holds them"
)


def cmd_release(m: LockManager, args, out) -> int:
    removed = m.unlock(LockObject.parse(args.name))
    print(RELEASE_OVERRIDE, file=out)
    for i in removed:
        print(
            f"released {i.mode.value} {i.data.lock_type.value} lock {i.lock_id} "
            f"(query_id={i.data.query_id}, user={i.data.user or '?'})",
            file=out,
        )
    return 0


def cmd_stale(m: LockManager, args, out) -> int:
    """Explicit locks whose owner is gone (its presence lapsed), and with ``--older-than`` also
    those older than that whose owner cannot be told alive; a living owner's are never stale."""
    max_age = parse_duration("--older-than", args.older_than) if args.older_than else None
    now_ms = int(dt.datetime.now().timestamp() * 1000)
    explicit = [i for i in m.list_locks() if i.data.lock_type is LockType.EXPLICIT]
    alive = m.owners_alive(explicit)
    old = [
        i
        for i, a in zip(explicit, alive, strict=True)
        if a is False or (a is None and max_age is not None and _age(i, now_ms) > max_age)
    ]
    owner_word = dict(zip((i.lock_id for i in explicit), alive, strict=True))
    empty = m.leftovers()
    for i in old:
        print(
            f"stale explicit lock: {i.name} {i.mode.value} {i.lock_id} "
            f"age={_age(i, now_ms):.0f}s owner={_owner_state(owner_word[i.lock_id])} "
            f"agent={i.data.agent or '?'} query_id={i.data.query_id}",
            file=out,
        )
    for path in empty:
        print(f"empty object node: {path}", file=out)
    if not args.apply:
        print(
            f"{len(old)} stale explicit lock(s), {len(empty)} empty node(s); "
            "run again with --apply to remove them",
            file=out,
        )
        return 0
    # asked again just before: an owner that registered meanwhile (a new ZooKeeper session)
    # keeps its locks; only those still found gone (or old and unknown) go
    again = dict(zip((i.lock_id for i in old), m.owners_alive(old) if old else [], strict=True))
    old = [
        i
        for i in old
        if again[i.lock_id] is False or (again[i.lock_id] is None and max_age is not None)
    ]
    failed = m.remove_locks(old)
    removed_nodes = m.remove_leftovers(empty)
    print(
        f"removed {len(old) - len(failed)} stale explicit lock(s), "
        f"{len(removed_nodes)} empty node(s)",
        file=out,
    )
    for path in failed:
        print(f"could not remove {path}", file=sys.stderr)
    return 1 if failed else 0


def _owner_state(alive: bool | None) -> str:
    return {True: "alive", False: "gone", None: "unknown"}[alive]


def build_parser(prog: str = help_text.PROG) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=help_text.summary(__doc__))
    common = argparse.ArgumentParser(add_help=False)
    for flag, _, text in _shorthands():
        common.add_argument(flag, help=text)
    common.add_argument(
        "--conf",
        action="append",
        metavar="KEY=VALUE",
        help="any spark.sparklock.* key (repeatable)",
    )
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("locks", parents=[common], help="list locks (SHOW LOCKS EXTENDED columns)")
    s.add_argument("--object", help="only this object and below, e.g. default@t or default@t@p=1")
    s.add_argument(
        "--waiting",
        action="store_true",
        help="only the requests waiting for a lock (state WAITING; blocked_by names the holder)",
    )
    s.set_defaults(run=cmd_locks)
    s = sub.add_parser(
        "release",
        parents=[common],
        help="force-release every granted lock on exactly one object, whoever holds it (UNLOCK as "
        "the operator's override: spark.sparklock.unlock.policy does not apply)",
        description="Force-release every granted lock on exactly one object, whoever holds it: the "
        "operator's override, not subject to spark.sparklock.unlock.policy (anyone who can "
        "write the ZooKeeper namespace can do this; see docs/security.md).",
    )
    s.add_argument("name", help="Hive display name: db, db@t, db@t@p=1/q=2")
    s.set_defaults(run=cmd_release)
    s = sub.add_parser(
        "stale",
        parents=[common],
        help="find (and with --apply remove) explicit locks whose owner is gone, and empty nodes",
    )
    s.add_argument(
        "--older-than",
        default=None,
        help="also explicit locks older than this (e.g. 24h) whose owner cannot be told alive "
        "(Hive's locks, older data); a living owner's locks are never stale",
    )
    s.add_argument("--apply", action="store_true", help="remove what was found")
    s.set_defaults(run=cmd_stale)
    for backend in BACKENDS.values():
        if backend.add_commands is not None:
            backend.add_commands(sub)
    submit_conf.register(sub)
    _add_servers(sub)
    return p


def _add_servers(sub) -> None:
    """The Spark servers (sparklock.servers): they run a Spark driver, not a ZooKeeper tool."""
    from .servers import connect, thrift

    thrift.add_parser(sub)
    connect.add_parser(sub)


def main(argv: Sequence[str] | None = None, out=None, prog: str = help_text.PROG) -> int:
    """The ``sparklock`` console script (and ``python -m sparklock``, which names itself so)."""
    out = out or sys.stdout
    args = build_parser(prog).parse_args(argv)
    if getattr(args, "standalone", None):  # subcommands that need no lock manager
        return args.standalone(args, out)
    if getattr(args, "run_server", None) is not None:
        return args.run_server(args)
    try:
        config = _config(args)
        manager = BACKENDS[config.manager].create(config)
        try:
            return args.run(manager, args, out)
        finally:
            manager.close()
    except SparkLockError as e:
        print(str(e), file=sys.stderr)
        return 2
