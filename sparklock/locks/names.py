"""How names become path components: Hive's escaping, and the scopes of other catalogs.

A database, table or partition name becomes one component of an object's path (its znode, its
display name's parts) escaped exactly as Hive and Spark escape partition directories
(``FileUtils.escapePathName``), plus what ZooKeeper refuses. A catalog other than the session
catalog and its namespace become a *scope* (``ice.db.``): each part escaped the same way, its
``.`` too, and ended with ``.`` (see :mod:`.objects`).

Escaping is also the safety boundary of the ZooKeeper tree: no name may produce a path component
that leaves the object's own node (``/``, ``.``, ``..``) or that ZooKeeper rejects.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from ..errors import InvalidObjectError

# Hive's / Spark's partition-path escape set (ExternalCatalogUtils.charToEscape, non-Windows).
_HIVE_ESCAPED = frozenset(
    [chr(c) for c in range(0x01, 0x20)]
    + ['"', "#", "%", "'", "*", "/", ":", "=", "?", "\\", "\x7f", "{", "[", "]", "^"]
)
DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"
MAX_COMPONENT_LENGTH = 1024


def _zk_forbidden(ch: str) -> bool:
    """Characters ZooKeeper refuses in a path (PathUtils.validatePath), beyond Hive's escapes."""
    o = ord(ch)
    # Above U+FFFF: Java sees a surrogate pair (\ud800-\udfff), which validatePath refuses.
    return o == 0 or 0x7F <= o <= 0x9F or 0xD800 <= o <= 0xF8FF or o >= 0xFFF0


# Any character escape_path_name changes: Hive's set and what ZooKeeper refuses. Names without
# one (nearly all) skip the per-character loop.
_NEEDS_ESCAPE = re.compile(
    "["
    + "".join(re.escape(c) for c in sorted(_HIVE_ESCAPED))
    + "\x00\x7f-\x9f\ud800-\uf8ff\ufff0-\U0010ffff]"
)


def _percent(ch: str) -> str:
    return "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))


def escape_path_name(value: str | None) -> str:
    """Escape one partition key or value as Hive does; empty/None is Hive's default partition."""
    if value is None or value == "":
        return DEFAULT_PARTITION_NAME
    if _NEEDS_ESCAPE.search(value) is None:
        return value
    out = []
    for ch in value:
        if ch in _HIVE_ESCAPED:
            out.append(f"%{ord(ch):02X}")
        elif _zk_forbidden(ch):
            out.append(_percent(ch))
        else:
            out.append(ch)
    return "".join(out)


def unescape_path_name(value: str) -> str:
    """Inverse of :func:`escape_path_name` for names read back from ZooKeeper."""
    raw = bytearray()
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "%" and i + 2 < len(value) + 0 and _is_hex(value[i + 1 : i + 3]):
            raw.append(int(value[i + 1 : i + 3], 16))
            i += 3
        else:
            raw.extend(ch.encode("utf-8", "surrogatepass"))
            i += 1
    return raw.decode("utf-8", "surrogatepass")


def _is_hex(s: str) -> bool:
    return len(s) == 2 and all(c in "0123456789abcdefABCDEF" for c in s)


def escape_identifier(kind: str, name: str) -> str:
    """A database or table name as one znode component."""
    if not isinstance(name, str) or name == "":
        raise InvalidObjectError(f"{kind} name must be a non-empty string, got {name!r}")
    return _escaped_identifier(kind, name)


@lru_cache(maxsize=4096)  # the same few database and table names, over and over
def _escaped_identifier(kind: str, name: str) -> str:
    # "@" separates a display name's parts: escaped in identifiers so a name parses back.
    escaped = escape_path_name(name.lower()).replace("@", "%40")
    if escaped in (".", "..") or (kind == "database" and "." in escaped):
        # a "." in a database would read as a catalog scope (no Hive or Spark database has one)
        escaped = escaped.replace(".", "%2E")
    check_length(kind, name, escaped)
    return escaped


# -- catalog scopes ---------------------------------------------------------------------------
#: What ends every part of a scope (``ice.db.``): a catalog's or a namespace's component.
SCOPE_END = "."


def scope_part(kind: str, name: str) -> str:
    """One catalog, namespace or table name of a catalog scope as an escaped component body:
    as a Hive identifier, with every ``.`` escaped too so that the parts split back exactly."""
    if not isinstance(name, str) or name == "":
        raise InvalidObjectError(f"{kind} name must be a non-empty string, got {name!r}")
    escaped = _escaped_identifier(kind, name).replace(".", "%2E")
    check_length(kind, name, escaped + SCOPE_END)
    return escaped


def catalog_scope(catalog: str, namespace: Sequence[str] = ()) -> str:
    """The scope of ``catalog`` and its ``namespace`` parts: ``ice.``, ``ice.a.b.``."""
    return "".join(
        scope_part("catalog" if i == 0 else "namespace", part) + SCOPE_END
        for i, part in enumerate((catalog, *namespace))
    )


def is_scope(database: str) -> bool:
    """Whether a database slot holds a catalog scope (``ice.db.``: non-empty parts, each ending
    with ``.``) rather than a Hive database (whose ``.`` are escaped in its names)."""
    return (
        database.endswith(SCOPE_END)
        and not database.startswith(SCOPE_END)
        and SCOPE_END * 2 not in database
    )


def scope_components(scope: str) -> tuple[str, ...]:
    """A scope's components, each ending with ``.``: ``ice.a.`` -> ``("ice.", "a.")``."""
    return tuple(part + SCOPE_END for part in scope[: -len(SCOPE_END)].split(SCOPE_END))


@lru_cache(maxsize=4096)
def canonical_scope(scope: str) -> str:
    """A scope as :func:`catalog_scope` makes it (parts lower-cased, escaped the one way), from
    any spelling of it (a display name typed by an operator, a znode read back)."""
    parts = [unescape_path_name(c[: -len(SCOPE_END)]) for c in scope_components(scope)]
    return catalog_scope(parts[0], parts[1:])


def check_length(kind: str, raw: str, escaped: str) -> None:
    if len(escaped) > MAX_COMPONENT_LENGTH:
        raise InvalidObjectError(
            f"{kind} name {raw[:40]!r}... is {len(escaped)} characters once escaped; "
            f"at most {MAX_COMPONENT_LENGTH} are accepted"
        )
