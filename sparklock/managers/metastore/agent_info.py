"""What a lock request's ``agentInfo`` carries: the query id, and who owns the request.

The metastore knows no owners: a request has a user, a host and 128 characters of agent info
(Hive's ``DbTxnManager`` puts its query id there). Another driver's deadlock detection needs to
know which session holds a lock and whether it is an explicit one (a ``LOCK TABLE`` lock stays
until its session says UNLOCK; a statement's goes when the statement ends), so sparklock's
requests carry it after the query id, in the ``:k=v`` style of its ZooKeeper lock data::

    <query id>:s=<owning session>:l=<E|I>:g=<agent>

``s=`` names the session (a hash ``#<16 hex>`` when the whole would not fit in 128
characters), ``l=`` says EXPLICIT or IMPLICIT, ``g=`` the Spark application or server session
(left out when it would not fit). Hive's SHOW LOCKS shows the whole text as the agent info;
sparklock lists the query id alone. A request without ``:s=`` (Hive's, or an older sparklock's)
names no owner: its query id is the whole text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ...locks.model import LockData, LockType

#: The metastore's column (``HIVE_LOCKS.HL_AGENT_INFO``) is 128 characters wide.
MAX_AGENT_INFO = 128
_TYPE_LETTER = {LockType.EXPLICIT: "E", LockType.IMPLICIT: "I"}
_LETTER_TYPE = {v: k for k, v in _TYPE_LETTER.items()}


@dataclass(frozen=True)
class AgentInfo:
    """A request's agent info read back: its query id and, for sparklock's, its owner."""

    query_id: str
    owner: str = ""  # "" for a request that names none (Hive's)
    lock_type: LockType = LockType.IMPLICIT
    agent: str = ""


def _clean(text: str) -> str:
    return text.replace(":", "")


def encode(data: LockData, owner: str) -> str:
    """The agent info of a request of ``owner`` with lock data ``data`` (at most 128 chars)."""
    query = _clean(data.query_id)[:64]
    who = _clean(owner or data.owner)
    if not who:
        return query
    kind = _TYPE_LETTER[data.lock_type]
    agent = _clean(data.agent)
    text = f"{query}:s={who}:l={kind}"
    if agent and len(text) + len(agent) + 3 <= MAX_AGENT_INFO:
        text += f":g={agent}"
    if len(text) > MAX_AGENT_INFO:  # a long session name: a hash every reader computes alike
        digest = hashlib.sha1(who.encode("utf-8")).hexdigest()[:16]
        text = f"{query}:s=#{digest}:l={kind}"
    return text


def decode(text: str | None) -> AgentInfo:
    """The fields of an agent info; a text without ``:s=`` is a bare query id (never fails)."""
    text = text or ""
    head, sep, rest = text.partition(":s=")
    if not sep:
        return AgentInfo(text)
    parts = rest.split(":")
    fields = dict(p.partition("=")[::2] for p in parts[1:])
    kind = _LETTER_TYPE.get(fields.get("l", ""), LockType.IMPLICIT)
    return AgentInfo(head, parts[0], kind, fields.get("g", ""))
