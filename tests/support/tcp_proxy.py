"""A loopback TCP proxy a test can cut: the network between a client and its server failing."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable


class TcpProxy:
    """Forwards 127.0.0.1:<port> to ``host:port`` until :meth:`cut` (then nothing connects,
    until :meth:`reopen`); from ``source`` (another loopback address) when given.

    :meth:`silence` is the quieter partition: connections stay open (and new ones are accepted)
    but every byte is dropped both ways, as a lost route or a firewall dropping packets does, so
    a client learns only from its own read timeout; :meth:`heal` resets the connections that
    lived through it and forwards again."""

    def __init__(self, host: str, port: int, *, source: str | None = None) -> None:
        self.target = (host, port)
        self.source = (source, 0) if source else None
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._guard = threading.Lock()
        self._cut = False
        self._silent = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # cut
            try:
                upstream = socket.create_connection(self.target, source_address=self.source)
            except OSError:
                client.close()
                continue
            with self._guard:
                if self._cut:
                    client.close()
                    upstream.close()
                    return
                self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                if not self._silent.is_set():
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            _shut_down((src, dst))

    def silence(self) -> None:
        """Drop every byte from now on, both ways, closing nothing."""
        self._silent.set()

    def heal(self) -> None:
        """Forward again after :meth:`silence`. The connections that lived through it are reset
        first: a stream that lost bytes must not resume with a gap (TCP never delivers one; a
        reply would reach its client out of turn), so they end as a route lost for too long
        ends theirs, and the clients reconnect."""
        with self._guard:
            _drop(self._sockets)
            self._sockets = []
            self._silent.clear()

    def cut(self) -> None:
        """Close every forwarded connection and stop accepting new ones."""
        with self._guard:
            self._cut = True
            sockets, self._sockets = self._sockets, []
        _drop([self.listener, *sockets])  # shut down first: that wakes the accept, close does not

    def reopen(self) -> None:
        """Accept and forward again on the same port after :meth:`cut` (the link restored; the
        connections it closed stay closed)."""
        with self._guard:
            if not self._cut:
                return
            self.listener = socket.create_server(("127.0.0.1", self.port))
            self._cut = False
        threading.Thread(target=self._accept, daemon=True).start()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *exc) -> None:
        self.cut()


def _shut_down(sockets: Iterable[socket.socket]) -> None:
    """End both directions of each socket (its pump's ``recv`` returns), keeping the fd."""
    for s in sockets:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _drop(sockets: list[socket.socket]) -> None:
    """Shut each socket down, then close it."""
    _shut_down(sockets)
    for s in sockets:
        s.close()
