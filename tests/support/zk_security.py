"""Secured ZooKeeper servers for tests: TLS certificates made with ``openssl``, digest and SASL.

Everything is made in a temporary directory per use: a CA and the server's and client's
certificates (PEM: what kazoo loads; the server reads PEM too, ``ssl.*.type=PEM``), a second CA
nobody trusts (a client with the wrong trust store), and a JAAS file for server-side SASL
DIGEST-MD5. Servers are :class:`sparklock.managers.zookeeper.local_server.ZooKeeperServer` with
extra ``zoo.cfg`` lines.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sparklock.managers.zookeeper.local_server import ZooKeeperServer, free_port

NETTY = "org.apache.zookeeper.server.NettyServerCnxnFactory"
SASL_PROVIDER = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"


def missing_tls_tools() -> str | None:
    """Why TLS servers cannot be made here (for ``pytest.skip``), or None."""
    if shutil.which("openssl") is None:
        return "openssl not on PATH (the tests make their certificates with it)"
    return None


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@dataclass(frozen=True)
class Certificates:
    """PEM files: ``ca`` signed ``server`` and ``client``; ``other_ca`` signed nothing here."""

    root: Path
    ca: Path
    other_ca: Path
    server_cert: Path
    server_key: Path
    server_bundle: Path  # key + certificate, the server's PEM key store
    client_cert: Path
    client_key: Path
    client_key_encrypted: Path
    client_key_password: str


def _ca(root: Path, name: str) -> tuple[Path, Path]:
    key, cert = root / f"{name}.key", root / f"{name}.pem"
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key.name,
             "-out", cert.name, "-days", "2", "-subj", f"/CN={name}", cwd=root)  # fmt: skip
    return key, cert


def _signed(root: Path, name: str, ca: tuple[Path, Path], san: str) -> tuple[Path, Path]:
    key, csr, cert = root / f"{name}.key", root / f"{name}.csr", root / f"{name}.pem"
    ext = root / f"{name}.ext"
    ext.write_text(f"subjectAltName={san}\n")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key.name, "-out", csr.name,
             "-subj", f"/CN={name}", cwd=root)  # fmt: skip
    _openssl("x509", "-req", "-in", csr.name, "-CA", ca[1].name, "-CAkey", ca[0].name,
             "-CAcreateserial", "-out", cert.name, "-days", "2", "-extfile", ext.name,
             cwd=root)  # fmt: skip
    return key, cert


def make_certificates(root: Path, hostname_san: str = "IP:127.0.0.1,DNS:localhost") -> Certificates:
    """A CA, a server certificate for ``hostname_san``, a client certificate, a stray CA."""
    root.mkdir(parents=True, exist_ok=True)
    ca = _ca(root, "ca")
    other = _ca(root, "other-ca")
    server_key, server_cert = _signed(root, "server", ca, hostname_san)
    client_key, client_cert = _signed(root, "client", ca, "DNS:sparklock-client")
    bundle = root / "server-bundle.pem"
    bundle.write_text(server_key.read_text() + server_cert.read_text())
    password = "client-key-pass"
    encrypted = root / "client-encrypted.key"
    _openssl("pkey", "-in", client_key.name, "-aes256", "-passout", f"pass:{password}",
             "-out", encrypted.name, cwd=root)  # fmt: skip
    return Certificates(
        root, ca[1], other[1], server_cert, server_key, bundle, client_cert, client_key,
        encrypted, password,
    )  # fmt: skip


class TlsZooKeeperServer(ZooKeeperServer):
    """A ZooKeeper serving TLS on ``secure_port`` besides its plain ``port``."""

    def __init__(self, secure_port: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.secure_port = secure_port


def tls_server(certs: Certificates, client_auth: str = "need") -> TlsZooKeeperServer:
    """A ZooKeeper serving TLS on ``secure_port`` (its plain port stays, for the probes)."""
    secure_port = free_port()
    return TlsZooKeeperServer(
        secure_port,
        extra_config=[
            f"secureClientPort={secure_port}",
            "secureClientPortAddress=127.0.0.1",
            f"serverCnxnFactory={NETTY}",
            f"ssl.keyStore.location={certs.server_bundle}",
            "ssl.keyStore.type=PEM",
            f"ssl.trustStore.location={certs.ca}",
            "ssl.trustStore.type=PEM",
            f"ssl.clientAuth={client_auth}",
        ],
    )


def sasl_server(root: Path, users: dict[str, str]) -> ZooKeeperServer:
    """A ZooKeeper that authenticates SASL DIGEST-MD5 ``users`` (name -> password); the
    built-in ``digest`` scheme works on every server without configuration."""
    root.mkdir(parents=True, exist_ok=True)
    entries = " ".join(f'user_{name}="{password}"' for name, password in users.items())
    jaas = root / "jaas.conf"
    jaas.write_text(
        "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
        f"  {entries};\n}};\n"
    )
    return ZooKeeperServer(
        extra_config=[f"authProvider.1={SASL_PROVIDER}"],
        jvm_options=[f"-Djava.security.auth.login.config={jaas}"],
    )
