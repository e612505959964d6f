"""Two ZooKeeper requests kazoo has no fast form of: ``multiRead`` and a bulk write ``multi``.

Protocol classes in kazoo's own shape (``type``, ``serialize``, ``deserialize``), handed to the
client's request queue like its built-in ones; the transport decides when to send them.
"""

from __future__ import annotations

import struct
from collections import namedtuple

from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import (
    Create,
    Delete,
    GetChildren,
    GetData,
    MultiHeader,
    Transaction,
    ZnodeStat,
    int_struct,
    multiheader_struct,
    read_buffer,
    read_string,
    stat_struct,
)


class MultiRead(namedtuple("MultiRead", "operations")):
    """ZooKeeper's ``multiRead`` (opcode 22, ZooKeeper 3.6+): independent reads in one request.

    Unlike a write ``multi`` nothing is atomic: every operation gets its own result or error.
    ``deserialize`` returns ``None`` for an empty body, which is what a server that does not know
    the opcode answers.
    """

    type = 22

    def serialize(self) -> bytearray:
        b = bytearray()
        for op in self.operations:
            b.extend(MultiHeader(op.type, False, -1).serialize())
            b.extend(op.serialize())
        b.extend(multiheader_struct.pack(-1, True, -1))
        return b

    @classmethod
    def deserialize(cls, buf: bytes, offset: int) -> list | None:
        if offset >= len(buf):
            return None
        results: list = []
        header, offset = MultiHeader.deserialize(buf, offset)
        while not header.done:
            if header.type == GetChildren.type:
                count = int_struct.unpack_from(buf, offset)[0]
                offset += int_struct.size
                children = []
                for _ in range(max(count, 0)):
                    child, offset = read_string(buf, offset)
                    children.append(child)
                results.append(children)
            elif header.type == GetData.type:
                data, offset = read_buffer(buf, offset)
                stat = ZnodeStat._make(stat_struct.unpack_from(buf, offset))
                offset += stat_struct.size
                results.append((data, stat))
            elif header.type == -1:
                err = int_struct.unpack_from(buf, offset)[0]
                offset += int_struct.size
                results.append(EXCEPTIONS[err]())
            else:  # pragma: no cover - a server answering with an op we did not send
                raise ValueError(f"unexpected multiRead result type {header.type}")
            header, offset = MultiHeader.deserialize(buf, offset)
        return results


_CREATE_HEADER = multiheader_struct.pack(Create.type, False, -1)
_DELETE_HEADER = multiheader_struct.pack(Delete.type, False, -1)
_MULTI_DONE = multiheader_struct.pack(-1, True, -1)
_ANY_VERSION = int_struct.pack(-1)
#: A multi result's header and the int after it (a created path's length).
_HEADER_AND_LENGTH = struct.Struct(">iBii")


class WriteMulti(Transaction):
    """kazoo's ``Transaction`` (the same request and answer; kazoo still unchroots the created
    paths) with a serializer and parser made for what lock sets consist of — creates and
    deletes, by the thousand — about five times cheaper than building them op by op."""

    __slots__ = ()

    def serialize(self) -> bytes:
        # A lock set's creates share their data, ACL and flags (one tail of bytes, made once)
        # and their paths a few lengths (one header+length prefix each): per operation, only
        # its path is encoded.
        pack = int_struct.pack
        tails: dict[tuple[int, int, int], bytes] = {}
        create_heads: dict[int, bytes] = {}  # path length -> header and length
        delete_heads: dict[int, bytes] = {}
        parts: list[bytes] = []
        for op in self.operations:
            kind = type(op)
            if kind is Create and op.path and op.data is not None:
                data, acl, flags = op.data, op.acl, op.flags
                tail = tails.get((id(data), id(acl), flags))
                if tail is None:
                    acl_bytes = bytes(Create("", b"", acl, 0).serialize()[8:-4])
                    tail = pack(len(data)) + data + acl_bytes + pack(flags)
                    tails[(id(data), id(acl), flags)] = tail
                path = op.path.encode("utf-8")
                head = create_heads.get(len(path))
                if head is None:
                    head = create_heads[len(path)] = _CREATE_HEADER + pack(len(path))
                parts += (head, path, tail)
            elif kind is Delete and op.path:
                path = op.path.encode("utf-8")
                head = delete_heads.get(len(path))
                if head is None:
                    head = delete_heads[len(path)] = _DELETE_HEADER + pack(len(path))
                version = op.version
                parts += (head, path, _ANY_VERSION if version == -1 else pack(version))
            else:
                parts.append(bytes(MultiHeader(op.type, False, -1).serialize() + op.serialize()))
        parts.append(_MULTI_DONE)
        return b"".join(parts)

    @classmethod
    def deserialize(cls, buf: bytes, offset: int) -> list:
        # a created path's header and length are read in one unpack (a result's header and
        # the next four bytes, when there are four more)
        header = multiheader_struct.unpack_from
        size = multiheader_struct.size
        with_length = _HEADER_AND_LENGTH.unpack_from
        last = len(buf) - _HEADER_AND_LENGTH.size  # where one can still be read
        number = int_struct.unpack_from
        create, delete = Create.type, Delete.type
        results: list = []
        append = results.append
        while True:
            if offset <= last:
                kind, done, _, length = with_length(buf, offset)
            else:  # the closing header (or a server's mistake: then struct.error, like kazoo)
                kind, done, _ = header(buf, offset)
                length = number(buf, offset + size)[0] if kind == create else 0
            offset += size
            if done == 1:
                return results
            if kind == create:
                offset += 4
                append(buf[offset : offset + length].decode("utf-8"))
                offset += length
            elif kind == delete:
                append(True)
            elif kind == -1:
                append(EXCEPTIONS[number(buf, offset)[0]]())
                offset += 4
            else:  # pragma: no cover - we send only creates and deletes
                raise ValueError(f"unexpected multi result type {kind}")
