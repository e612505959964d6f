"""The Hive metastore's lock API on the wire: the Thrift structs and calls sparklock uses.

Declared here from the field ids of Hive 4's ``hive_metastore.thrift`` (the ids are the protocol;
a Hive 3 metastore skips the fields it does not know), so the manager needs only the ``thrift``
runtime, not generated bindings of the whole metastore service (thousands of calls it never makes).
Structs use ``thrift``'s generic codec (``TBase`` with a ``thrift_spec``), which its C extension
accelerates when present: a wide SHOW LOCKS decodes in C.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from thrift.protocol.TBase import TBase, TExceptionBase
from thrift.Thrift import TApplicationException, TMessageType, TType

# LockType, LockLevel, LockState, DataOperationType (enums are i32 on the wire)
SHARED_READ, SHARED_WRITE, EXCLUSIVE, EXCL_WRITE = 1, 2, 3, 4
LOCK_TYPE_NAMES = {1: "SHARED_READ", 2: "SHARED_WRITE", 3: "EXCLUSIVE", 4: "EXCL_WRITE"}
DB, TABLE, PARTITION = 1, 2, 3
ACQUIRED, WAITING, ABORT, NOT_ACQUIRED = 1, 2, 3, 4
LOCK_STATE_NAMES = {1: "ACQUIRED", 2: "WAITING", 3: "ABORT", 4: "NOT_ACQUIRED"}
SELECT, INSERT, UPDATE, DELETE, UNSET, NO_TXN = 1, 2, 3, 4, 5, 6

_STR = (TType.STRING, "UTF8")


def _struct(name: str, fields: Sequence[tuple], base: type = TBase) -> type:
    """A Thrift struct class from ``(id, ttype, name[, type args])`` rows."""
    spec: list[Any] = [None] * (max(f[0] for f in fields) + 1)
    for f in fields:
        fid, ttype, fname = f[0], f[1], f[2]
        args = f[3] if len(f) > 3 else None
        spec[fid] = (fid, ttype, fname, args, None)
    slots = tuple(f[2] for f in fields)

    def __init__(self, **kwargs: Any) -> None:
        for slot in slots:
            setattr(self, slot, kwargs.pop(slot, None))
        if kwargs:
            raise TypeError(f"{name}: unknown fields {sorted(kwargs)}")

    cls = type(name, (base,), {"__slots__": slots, "__init__": __init__})
    cls.thrift_spec = tuple(spec)  # type: ignore[attr-defined]
    return cls


def _of(cls: type) -> list:
    """A nested struct's type args: its class and its spec (no struct here is recursive)."""
    return [cls, cls.thrift_spec]  # type: ignore[attr-defined]


def _list_of(cls: type) -> tuple:
    return (TType.STRUCT, _of(cls), False)


def _str(fid: int, name: str) -> tuple:
    return (fid, TType.STRING, name, "UTF8")


LockComponent = _struct(
    "LockComponent",
    [
        (1, TType.I32, "type"),
        (2, TType.I32, "level"),
        _str(3, "dbname"),
        _str(4, "tablename"),
        _str(5, "partitionname"),
        (6, TType.I32, "operationType"),
        (7, TType.BOOL, "isTransactional"),
        (8, TType.BOOL, "isDynamicPartitionWrite"),
    ],
)
LockRequest = _struct(
    "LockRequest",
    [
        (1, TType.LIST, "component", _list_of(LockComponent)),
        (2, TType.I64, "txnid"),
        _str(3, "user"),
        _str(4, "hostname"),
        _str(5, "agentInfo"),
    ],
)
LockResponse = _struct(
    "LockResponse",
    [(1, TType.I64, "lockid"), (2, TType.I32, "state"), _str(3, "errorMessage")],
)
CheckLockRequest = _struct(
    "CheckLockRequest",
    [(1, TType.I64, "lockid"), (2, TType.I64, "txnid"), (3, TType.I64, "elapsed_ms")],
)
UnlockRequest = _struct("UnlockRequest", [(1, TType.I64, "lockid")])
ShowLocksRequest = _struct(
    "ShowLocksRequest",
    [
        _str(1, "dbname"),
        _str(2, "tablename"),
        _str(3, "partname"),
        (4, TType.BOOL, "isExtended"),
        (5, TType.I64, "txnid"),
    ],
)
ShowLocksResponseElement = _struct(
    "ShowLocksResponseElement",
    [
        (1, TType.I64, "lockid"),
        _str(2, "dbname"),
        _str(3, "tablename"),
        _str(4, "partname"),
        (5, TType.I32, "state"),
        (6, TType.I32, "type"),
        (7, TType.I64, "txnid"),
        (8, TType.I64, "lastheartbeat"),
        (9, TType.I64, "acquiredat"),
        _str(10, "user"),
        _str(11, "hostname"),
        (12, TType.I32, "heartbeatCount"),
        _str(13, "agentInfo"),
        (14, TType.I64, "blockedByExtId"),
        (15, TType.I64, "blockedByIntId"),
        (16, TType.I64, "lockIdInternal"),
    ],
)
ShowLocksResponse = _struct(
    "ShowLocksResponse", [(1, TType.LIST, "locks", _list_of(ShowLocksResponseElement))]
)
HeartbeatRequest = _struct("HeartbeatRequest", [(1, TType.I64, "lockid"), (2, TType.I64, "txnid")])


class ThriftError(TExceptionBase):
    """A declared exception of a metastore call (its one field is ``message``)."""

    __slots__ = ()

    def __str__(self) -> str:
        return f"{type(self).__name__}: {getattr(self, 'message', None) or ''}".rstrip(": ")


def _exception(name: str) -> type:
    return _struct(name, [_str(1, "message")], ThriftError)


# The exceptions the lock calls declare (each is a struct with one ``message`` field).
NoSuchTxnException = _exception("NoSuchTxnException")
TxnAbortedException = _exception("TxnAbortedException")
NoSuchLockException = _exception("NoSuchLockException")
TxnOpenException = _exception("TxnOpenException")
ConfigValSecurityException = _exception("ConfigValSecurityException")
MetaException = _exception("MetaException")


class Call:
    """One service call: its name, its argument struct and its result struct (field 0 the
    answer, fields 1.. the declared exceptions)."""

    def __init__(
        self,
        name: str,
        args: Sequence[tuple],
        success: tuple | None,
        errors: Sequence[type],
    ) -> None:
        self.name = name
        self.args = _struct(f"{name}_args", args)
        rows: list[tuple] = [success] if success else []
        rows += [(i, TType.STRUCT, f"o{i}", _of(err)) for i, err in enumerate(errors, 1)]
        rows = rows or [(1, TType.STRUCT, "o1", _of(MetaException))]
        self.result = _struct(f"{name}_result", rows)
        self.has_success = success is not None

    def write(self, oprot: Any, seqid: int, **kwargs: Any) -> None:
        oprot.writeMessageBegin(self.name, TMessageType.CALL, seqid)
        self.args(**kwargs).write(oprot)
        oprot.writeMessageEnd()
        oprot.trans.flush()

    def read(self, iprot: Any) -> Any:
        _, mtype, _ = iprot.readMessageBegin()
        if mtype == TMessageType.EXCEPTION:
            err = TApplicationException()
            err.read(iprot)
            iprot.readMessageEnd()
            raise err
        result = self.result()
        result.read(iprot)
        iprot.readMessageEnd()
        for slot in result.__slots__:
            value = getattr(result, slot)
            if slot != "success" and value is not None:
                raise value
        if self.has_success:
            if result.success is None:
                raise TApplicationException(
                    TApplicationException.MISSING_RESULT, f"{self.name} failed: unknown result"
                )
            return result.success
        return None


def _rqst(cls: type) -> list[tuple]:
    return [(1, TType.STRUCT, "rqst", _of(cls))]


LOCK = Call(
    "lock",
    _rqst(LockRequest),
    (0, TType.STRUCT, "success", _of(LockResponse)),
    [NoSuchTxnException, TxnAbortedException],
)
CHECK_LOCK = Call(
    "check_lock",
    _rqst(CheckLockRequest),
    (0, TType.STRUCT, "success", _of(LockResponse)),
    [NoSuchTxnException, TxnAbortedException, NoSuchLockException],
)
UNLOCK = Call("unlock", _rqst(UnlockRequest), None, [NoSuchLockException, TxnOpenException])
SHOW_LOCKS = Call(
    "show_locks", _rqst(ShowLocksRequest), (0, TType.STRUCT, "success", _of(ShowLocksResponse)), []
)
HEARTBEAT = Call(
    "heartbeat",
    [(1, TType.STRUCT, "ids", _of(HeartbeatRequest))],
    None,
    [NoSuchLockException, NoSuchTxnException, TxnAbortedException],
)
GET_CONFIG_VALUE = Call(
    "get_config_value",
    [_str(1, "name"), _str(2, "defaultValue")],
    (0, TType.STRING, "success", "UTF8"),
    [ConfigValSecurityException],
)
