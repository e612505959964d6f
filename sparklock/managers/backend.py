"""What a backend is to the rest of sparklock: a name (the value of ``spark.sparklock.manager``),
its configuration section, how its manager is made, and what it adds to the command line.

A backend lives in one module or package under ``sparklock/managers/`` and exposes one
:class:`Backend`; :mod:`.registry` lists them. Nothing outside ``sparklock/managers/`` imports a
backend's code: the service talks to its :class:`~.base.LockManager`, the configuration to its
section, the command line to its hooks.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..locks.model import LockSettings
from ..values import ConfigKey

if TYPE_CHECKING:
    from .base import LockManager


class ManagerConfig(Protocol):
    """What a backend's manager is created from (``sparklock.config.SparkLockConfig`` is one)."""

    @property
    def manager(self) -> str: ...

    @property
    def backend(self) -> Any:
        """The backend's own section, as its :attr:`Backend.parse` made it."""

    @property
    def lock(self) -> LockSettings: ...


@dataclass(frozen=True)
class ManagerSettings:
    """A :class:`ManagerConfig` without the rest of the Spark configuration (tools, tests)."""

    manager: str
    backend: Any = None
    lock: LockSettings = LockSettings()


def _no_section(_values: Mapping[str, str]) -> None:
    return None


@dataclass(frozen=True)
class Backend:
    """One value of ``spark.sparklock.manager``."""

    name: str
    #: What the ``spark.sparklock.manager`` row of the docs says of it (Markdown, with its name).
    summary: str
    #: Makes the manager (imports the backend's client library only now).
    create: Callable[[ManagerConfig], LockManager]
    #: The keys of its section (``spark.sparklock.<name>.*``), documented with their defaults.
    keys: tuple[ConfigKey, ...] = ()
    #: Its section from the conf (every sparklock key with its default filled in, and the rest
    #: of the conf as given, e.g. ``spark.hadoop.*``); frozen and
    #: hashable (it picks the process's manager instance: one per distinct section). Raises
    #: ``ConfigError`` naming the key on a bad value.
    parse: Callable[[Mapping[str, str]], Hashable] = _no_section
    #: Whether other processes see its locks (Hive, other drivers, the operator's command
    #: line): the ``python -m sparklock locks|release|stale`` tools work with it only then.
    shared: bool = False
    #: Whether it reports its connection state (``telemetry.backend_state``): its gauge
    #: ``<name>Connected`` then shows in the driver's metrics from the start (0 until connected).
    reports_connection: bool = False
    #: Command-line shorthands for keys of its section: (flag, key, help), e.g. ``--quorum``.
    cli_options: tuple[tuple[str, str, str], ...] = ()
    #: Adds subcommands of its own to ``python -m sparklock`` (e.g. a local development server);
    #: they set ``standalone`` (run without a lock manager).
    add_commands: Callable[[argparse._SubParsersAction], None] | None = None
