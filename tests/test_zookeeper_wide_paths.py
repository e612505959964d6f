"""The ZooKeeper manager's per-lock arithmetic for wide lock sets, against its plain definitions
(no server): what a write multi puts on the wire and reads back (kazoo's ``Transaction``), how
ops are cut into multis, how many lock nodes are below each object node, which object nodes a
set needs and which of them this process knows to exist.

The fast forms share bytes between operations (one data/ACL/flags tail, one header per path
length) and count a level at a time; hypothesis drives them with what breaks such sharing:
operations with equal paths, different data or ACL objects, unicode, errors in the answer.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from kazoo.protocol.serialization import Create, Delete, Transaction, int_struct, multiheader_struct
from kazoo.security import OPEN_ACL_UNSAFE, make_digest_acl

from sparklock.locks.model import LockType
from sparklock.managers.zookeeper.layout import counts_below, object_paths
from sparklock.managers.zookeeper.recipe.tree_hints import TreeHints, needed_nodes
from sparklock.managers.zookeeper.wire.multi import WriteMulti
from sparklock.managers.zookeeper.wire.ops import (
    MULTI_BYTES,
    OPEN_ACL,
    multi_failure,
    op_bytes,
    weighed_batches,
)
from sparklock.managers.zookeeper.wire.owners import OwnerRegistry

_ACLS = [OPEN_ACL_UNSAFE, OPEN_ACL, [make_digest_acl("u", "p", all=True)]]
_DATAS = [b"", b"q1:1700000000000:SHARED:select 1:10.0.0.1:u=me", "é:1".encode()]

components = st.sampled_from(["db", "t", "p=1", "p=2", "k=\u00e9", "LOCK-SHARED-", "_sparklock_w"])
paths = st.lists(components, min_size=1, max_size=5).map(lambda c: "/" + "/".join(c))
creates = st.builds(
    Create,
    paths,
    # equal data in distinct objects too: the serializer's cache must not confuse them
    st.one_of(st.sampled_from(_DATAS), st.binary(max_size=40)),
    st.sampled_from(_ACLS),
    st.integers(0, 3),
)
deletes = st.builds(Delete, paths, st.sampled_from([-1, -1, 0, 7]))
operations = st.lists(st.one_of(creates, deletes), max_size=30)


@settings(max_examples=300, deadline=None)
@given(operations)
def test_a_write_multi_is_the_bytes_kazoos_transaction_sends(ops):
    assert WriteMulti(ops).serialize() == bytes(Transaction(ops).serialize())


def _answer(ops: list, errors: list[int | None]) -> bytes:
    """A server's answer to ``ops``: created paths, deletes, or the given error codes."""
    parts = []
    for op, err in zip(ops, errors, strict=True):
        if err is not None:
            parts.append(multiheader_struct.pack(-1, False, err) + int_struct.pack(err))
        elif type(op) is Create:
            raw = (op.path + "0000000042").encode()
            parts.append(multiheader_struct.pack(1, False, 0) + int_struct.pack(len(raw)) + raw)
        else:
            parts.append(multiheader_struct.pack(2, False, 0))
    parts.append(multiheader_struct.pack(-1, True, -1))
    return b"".join(parts)


@settings(max_examples=300, deadline=None)
@given(operations, st.data())
def test_a_write_multi_answer_reads_as_kazoos_transaction_reads_it(ops, data):
    codes = st.none() | st.sampled_from([-2, -101, -110, -111])
    errors = data.draw(st.lists(codes, min_size=len(ops), max_size=len(ops)))
    offset = data.draw(st.integers(0, 16))
    buf = b"\x00" * offset + _answer(ops, errors)

    def shown(results: list) -> list:
        return [type(r).__name__ if isinstance(r, Exception) else r for r in results]

    ours = WriteMulti.deserialize(buf, offset)
    assert shown(ours) == shown(Transaction.deserialize(buf, offset))
    failed = [r for r in ours if isinstance(r, Exception)]
    assert (multi_failure(ours) is None) == (not failed)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 200_000), max_size=40))
def test_multis_are_cut_as_one_op_at_a_time_would_cut_them(lengths):
    ops = [Create("/" + "x" * n, b"d" * (n % 7), OPEN_ACL, 0) for n in lengths]  # up to 8 MB
    cut = list(weighed_batches(ops))
    covered = [i for part, _ in cut for i in range(len(ops))[part]]
    assert covered == list(range(len(ops)))
    for part, size in cut:
        assert size == sum(map(op_bytes, ops[part]))
        assert size <= MULTI_BYTES or part.stop - part.start == 1
    for (_, size), (following, _) in zip(cut, cut[1:], strict=False):
        assert size + op_bytes(ops[following.start]) > MULTI_BYTES  # no multi cut too soon


lock_paths = st.lists(paths.map(lambda p: p + "/LOCK-SHARED-0000000001"), max_size=40)


def _walked(lock_paths: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for path in lock_paths:
        for obj in object_paths(path):
            counts[obj] = counts.get(obj, 0) + 1
    return counts


@settings(max_examples=300, deadline=None)
@given(lock_paths)
def test_counts_below_each_object_node_are_the_ancestor_walks(locks):
    assert counts_below(locks) == _walked(locks)


@settings(max_examples=200, deadline=None)
@given(lock_paths, lock_paths, st.data())
def test_the_owner_registry_counts_like_one_walk_per_lock(first, second, data):
    """add and forget in bulk (paths added twice, counts handed in or not, a path named twice)
    leave the counts a walk per registered lock gives, and name the object nodes left unused."""
    registry = OwnerRegistry()
    registry.add(first, "a", LockType.IMPLICIT)
    registry.add(second + first[:1], "b", LockType.EXPLICIT)  # known already: counted once
    known = list(dict.fromkeys(first + second))
    gone = data.draw(st.lists(st.sampled_from(known), unique=True) if known else st.just([]))
    handed = counts_below(gone) if data.draw(st.booleans()) else None
    named = gone + gone[:1] if data.draw(st.booleans()) else gone  # (then ``handed`` is off)
    unused = registry.forget(named, handed)
    assert registry.forget(gone) == set()  # forgotten already: nothing changes
    expected = _walked([p for p in known if p not in gone])
    everything = set(_walked(known))
    for obj in everything:
        assert registry.local_count(obj) == expected.get(obj, 0)
    assert unused == {obj for obj in everything if obj not in expected}
    assert len(registry) == len(known) - len(gone)


@settings(max_examples=200, deadline=None)
@given(st.lists(paths, max_size=20))
def test_needed_nodes_are_every_object_and_its_ancestors(objects):
    want = {p for obj in objects for p in [obj, *object_paths(obj + "/x")] if p}
    assert needed_nodes(objects) == want


@settings(max_examples=200, deadline=None)
@given(st.lists(paths, max_size=12), st.lists(paths, max_size=6), st.booleans(), st.data())
def test_known_existing_answers_only_when_it_knows_every_node(objects, absent, root_known, data):
    """Under the root ``/db``: a node exists if it is the root (once seen), has a lock of ours
    below it, or is unknown unless it or an ancestor below the root was deleted by us."""
    owners = OwnerRegistry()
    ours = data.draw(st.lists(st.sampled_from(objects), max_size=4) if objects else st.just([]))
    owners.add([p + "/LOCK-SHARED-0000000001" for p in ours], "o", LockType.IMPLICIT)
    hints = TreeHints(("db",), owners)
    hints.root_known = root_known
    hints.note_absent(p for p in absent if p.startswith("/db/"))
    needed = needed_nodes(objects)

    def below_root_absent(path: str) -> bool:
        return any(p in hints.absent for p in [path, *object_paths(path)] if len(p) > len("/db"))

    answer = hints.known_existing(needed)
    if not hints.absent and not root_known:
        assert answer is None
        return
    known = {}
    for path in needed:
        if path == "/db":
            known[path] = True if root_known else None
        elif owners.local_count(path) > 0:
            known[path] = True
        else:
            known[path] = False if below_root_absent(path) else None
    if any(v is None for v in known.values()):
        assert answer is None
    else:
        assert answer == {p for p, v in known.items() if v}
