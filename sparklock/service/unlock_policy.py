"""Who may UNLOCK (``spark.sparklock.unlock.policy``).

Hive lets any session remove any lock (``any``, the default). With ``owner`` a user may remove the
locks on an object only if every one of them is theirs -- the ``u=<user>`` field of its data: the
Spark/OS user of a PySpark program, the JDBC user or Connect user id of a server session -- unless
the user is one of ``spark.sparklock.admins``. A lock without a user (a Hive client's, or one
written before sparklock recorded users) belongs to nobody sparklock can name: only an admin may
remove it. The check runs inside the manager's UNLOCK on exactly the locks it is about to remove
(``LockManager.unlock(check=...)``), so a lock that appears meanwhile is neither checked nor
removed.

The operator's ``python -m sparklock release`` is the override: it does not apply this policy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from ..config import UnlockPolicy
from ..errors import UnlockNotOwnerError
from ..locks.model import LockInfo

log = logging.getLogger("sparklock")

UnlockCheck = Callable[[Sequence[LockInfo]], None]


def _as_stored(user: str | None) -> str:
    """A user name as lock data stores it (``:`` cannot be part of a field)."""
    return (user or "").replace(":", "")


def _holder(info: LockInfo) -> str:
    return f"user {info.data.user}" if info.data.user else "an unknown user (no u= field)"


def unlock_check(policy: UnlockPolicy, user: str | None, object_name: str) -> UnlockCheck | None:
    """The check the manager runs on the locks an UNLOCK of ``object_name`` by ``user`` would
    remove; None when the policy lets anyone remove them."""
    if not policy.owner_only:
        return None
    asking = _as_stored(user)
    if policy.is_admin(asking):

        def audited(infos: Sequence[LockInfo]) -> None:
            others = sorted({_holder(i) for i in infos if i.data.user != asking})
            if others:
                log.info("sparklock: admin %s unlocks %s, held by %s", asking, object_name, others)

        return audited

    def owner_only(infos: Sequence[LockInfo]) -> None:
        foreign = [i for i in infos if not asking or i.data.user != asking]
        if not foreign:
            return
        held = "; ".join(
            f"{i.mode.value} {i.data.lock_type.value.lower()} lock held by {_holder(i)} "
            f"(query_id={i.data.query_id or '?'})"
            for i in foreign
        )
        who = f"user {asking}" if asking else "a user sparklock cannot name"
        raise UnlockNotOwnerError(
            f"UNLOCK of {object_name} refused for {who}: {held}; with "
            "spark.sparklock.unlock.policy=owner only the user holding a lock or an admin "
            "(spark.sparklock.admins) may remove it"
        )

    return owner_only
