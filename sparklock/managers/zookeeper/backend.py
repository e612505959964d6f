"""The ZooKeeper backend's registry entry: its settings section, its manager (kazoo is imported
only when one is made), its command-line shorthands and its local development server."""

from __future__ import annotations

import argparse

from ..backend import Backend, ManagerConfig
from ..base import LockManager
from . import settings


def _create(config: ManagerConfig) -> LockManager:
    from .manager import ZooKeeperLockManager

    return ZooKeeperLockManager(config)


def _add_commands(sub: argparse._SubParsersAction) -> None:
    from . import local_server_cli

    local_server_cli.register(sub)


BACKEND = Backend(
    name="zookeeper",
    summary="`zookeeper` (shared with other drivers and with Hive)",
    create=_create,
    keys=settings.KEYS,
    parse=settings.parse,
    shared=True,
    reports_connection=True,
    cli_options=(
        ("--quorum", settings.QUORUM, settings.QUORUM),
        ("--namespace", settings.NAMESPACE, settings.NAMESPACE),
    ),
    add_commands=_add_commands,
)
