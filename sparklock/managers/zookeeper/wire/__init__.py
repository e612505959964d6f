"""The ZooKeeper folder's lowest tier: talking to the servers, knowing nothing of locks' rules.

:mod:`.session` (the process's one kazoo client per quorum, its connection state and lease),
:mod:`.secure_connect` and :mod:`.security` (TLS, credentials, ACLs), :mod:`.polling` (kazoo's
cheaper ``select``), :mod:`.lease` (how long the session's locks are guaranteed),
:mod:`.transport` (requests, retries, errors as ours), :mod:`.ops` (the requests as values:
builders, weights, batches), :mod:`.coalescing` (many threads'
requests as one), :mod:`.multi` (multiRead / bulk multi on the wire), :mod:`.owners` (which
nodes this process created), :mod:`.clock` (the clock of other clients' writes). Imports nothing
from :mod:`..recipe` or the manager tier above it; the znode names come from :mod:`..layout`.
"""
