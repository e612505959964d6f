"""A loopback TCP proxy a test can cut: the network between a client and its server failing."""

from __future__ import annotations

import socket
import threading


class TcpProxy:
    """Forwards 127.0.0.1:<port> to ``host:port`` until :meth:`cut` (then nothing connects);
    from ``source`` (another loopback address) when given."""

    def __init__(self, host: str, port: int, *, source: str | None = None) -> None:
        self.target = (host, port)
        self.source = (source, 0) if source else None
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._guard = threading.Lock()
        self._cut = False
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

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        """Close every forwarded connection and stop accepting new ones."""
        with self._guard:
            self._cut = True
            sockets, self._sockets = self._sockets, []
        self.listener.close()
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *exc) -> None:
        self.cut()
