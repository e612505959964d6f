"""How sparklock talks to a secured ZooKeeper: TLS, authentication, the ACLs of its nodes.

The ``spark.sparklock.zookeeper.ssl.*``, ``.auth*`` and ``.acl`` keys, parsed into one frozen,
hashable :class:`ZooKeeperSecurity` (part of the key that picks the process's ZooKeeper client, so
two credentials never share a session), and turned into what kazoo takes (``use_ssl``, ``ca``,
``certfile``/``keyfile``, ``auth_data``, ``sasl_options``, ``default_acl``).

Secrets (the auth password, the key file's password) live in :class:`Secret`, whose ``repr`` and
``str`` never show them: a config object printed in a log, an error or a test failure stays safe.
"""

from __future__ import annotations

import importlib.util
import os
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass

from ....errors import REDACTED, ConfigError

SSL_ENABLED = "spark.sparklock.zookeeper.ssl.enabled"
SSL_CA = "spark.sparklock.zookeeper.ssl.ca"
SSL_CERT = "spark.sparklock.zookeeper.ssl.certFile"
SSL_KEY = "spark.sparklock.zookeeper.ssl.keyFile"
SSL_KEY_PASSWORD = "spark.sparklock.zookeeper.ssl.keyPassword"
SSL_HOSTNAME = "spark.sparklock.zookeeper.ssl.hostnameVerification"
AUTH = "spark.sparklock.zookeeper.auth"
AUTH_PASSWORD = "spark.sparklock.zookeeper.auth.password"
ACL_KEY = "spark.sparklock.zookeeper.acl"

AUTH_ACCEPTS = (
    "none, digest:<user>, sasl:DIGEST-MD5:<user> (password in "
    f"{AUTH_PASSWORD}), sasl:GSSAPI or sasl:GSSAPI:<principal> (Kerberos)"
)
ACL_ACCEPTS = (
    "open, creator, or a comma-separated list of scheme:id:perms (schemes world, auth, digest, "
    "ip, sasl, x509; perms a subset of cdrwa, or all), e.g. sasl:spark:cdrwa,world:anyone:r"
)
SCHEMES = ("world", "auth", "digest", "ip", "sasl", "x509")
#: ZooKeeper's permission bits (kazoo.security.Permissions; kazoo is imported only when used).
_PERMS = {"c": 4, "d": 8, "r": 1, "w": 2, "a": 16}
_DIGEST_ID = re.compile(r"^[^:]+:[A-Za-z0-9+/]{27}=$")


class Secret:
    """A password that never shows itself: ``repr``/``str`` are ``'***'`` (or ``''`` if unset)."""

    __slots__ = ("_value",)

    def __init__(self, value: str = "") -> None:
        self._value = value

    def reveal(self) -> str:
        """The secret itself, for the one place that hands it to kazoo."""
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "'***'" if self._value else "''"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash((Secret, self._value))


@dataclass(frozen=True)
class Auth:
    """Who sparklock is to ZooKeeper: ``scheme`` none, digest or sasl."""

    scheme: str = "none"
    mechanism: str = ""  # sasl: DIGEST-MD5 or GSSAPI
    user: str = ""  # digest / DIGEST-MD5 user, GSSAPI principal ('' = the ticket cache's)
    password: Secret = Secret()

    @property
    def enabled(self) -> bool:
        return self.scheme != "none"

    def identity(self) -> str:
        """What to call this identity in logs and errors (never the password)."""
        if self.scheme == "digest":
            return f"digest:{self.user}"
        if self.scheme == "sasl":
            return f"sasl:{self.mechanism}" + (f":{self.user}" if self.user else "")
        return "none (unauthenticated)"


@dataclass(frozen=True)
class TlsSettings:
    enabled: bool = False
    ca: str = ""  # PEM bundle of the CAs to trust; '' = the system's
    cert_file: str = ""
    key_file: str = ""
    key_password: Secret = Secret()
    hostname_verification: bool = True


@dataclass(frozen=True)
class AclSetting:
    """``open``, ``creator`` or ``list`` (``entries``: (scheme, id, perms) triples)."""

    kind: str = "open"
    entries: tuple[tuple[str, str, int], ...] = ()

    def acl(self) -> list | None:
        """kazoo's ``default_acl`` (None for open: kazoo's own default, world:anyone)."""
        from kazoo.security import ACL, CREATOR_ALL_ACL, READ_ACL_UNSAFE, Id

        if self.kind == "open":
            return None
        if self.kind == "creator":
            return list(CREATOR_ALL_ACL) + list(READ_ACL_UNSAFE)
        return [ACL(perms, Id(scheme, ident)) for scheme, ident, perms in self.entries]

    def describe(self) -> str:
        """The setting as logs and errors show it (digest hashes masked, as ZooKeeper's own
        getACL masks them)."""
        if self.kind != "list":
            return self.kind
        return ",".join(f"{s}:{_shown_id(s, i)}:{_perm_letters(p)}" for s, i, p in self.entries)


@dataclass(frozen=True)
class ZooKeeperSecurity:
    tls: TlsSettings = TlsSettings()
    auth: Auth = Auth()
    acl: AclSetting = AclSetting()

    @property
    def plain(self) -> bool:
        """Nothing configured: today's open, plain-text connection."""
        return not self.tls.enabled and not self.auth.enabled and self.acl.kind == "open"

    def kazoo_options(self) -> dict:
        """Keyword arguments for ``KazooClient`` (a fresh dict each time: kazoo mutates the
        SASL options it is given)."""
        options: dict = {}
        tls = self.tls
        if tls.enabled:
            options.update(
                use_ssl=True,
                verify_certs=True,
                check_hostname=tls.hostname_verification,
                ca=tls.ca or None,
                certfile=tls.cert_file or None,
                keyfile=tls.key_file or None,
                keyfile_password=tls.key_password.reveal() or None,
            )
        auth = self.auth
        if auth.scheme == "digest":
            options["auth_data"] = [("digest", f"{auth.user}:{auth.password.reveal()}")]
        elif auth.scheme == "sasl":
            sasl = {"mechanism": auth.mechanism}
            if auth.mechanism == "DIGEST-MD5":
                sasl.update(username=auth.user, password=auth.password.reveal())
            elif auth.user:
                sasl["principal"] = auth.user
            options["sasl_options"] = sasl
        acl = self.acl.acl()
        if acl is not None:
            options["default_acl"] = acl
        return options

    def secrets(self) -> tuple[str, ...]:
        """The secrets themselves (for masking them wherever text might show them)."""
        return tuple(s.reveal() for s in (self.auth.password, self.tls.key_password) if s.reveal())

    def describe(self) -> str:
        """One line for logs: what is on, never a secret."""
        return (
            f"tls={'on' if self.tls.enabled else 'off'}, auth={self.auth.identity()}, "
            f"acl={self.acl.describe()}"
        )


def _shown_id(scheme: str, ident: str) -> str:
    return ident.split(":", 1)[0] + ":***" if scheme == "digest" else ident


def _shown_acl(text: str) -> str:
    """An ACL setting as an error may show it: whatever follows a digest user is masked (a
    hash, or a cleartext password written there by mistake)."""
    return re.sub(r"(?i)(digest:[^:,]*:)[^,]*", r"\1***", text)


def _perm_letters(perms: int) -> str:
    return "".join(letter for letter, bit in _PERMS.items() if perms & bit)


def _readable(key: str, path: str) -> str:
    if not os.path.isfile(path) or not os.access(path, os.R_OK):
        raise ConfigError(key, path, "the path of a readable PEM file")
    return path


def _parse_tls(v: Mapping[str, str], parse_bool) -> TlsSettings:
    enabled = parse_bool(SSL_ENABLED, v[SSL_ENABLED])
    hostname = parse_bool(SSL_HOSTNAME, v[SSL_HOSTNAME])
    ca, cert, key = (str(v[k]).strip() for k in (SSL_CA, SSL_CERT, SSL_KEY))
    password = Secret(str(v[SSL_KEY_PASSWORD]))
    if not enabled:
        return TlsSettings(hostname_verification=hostname)
    if bool(cert) != bool(key):
        missing, given = (SSL_KEY, SSL_CERT) if cert else (SSL_CERT, SSL_KEY)
        raise ConfigError(missing, "", f"a PEM file, set together with {given}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if ca:
        try:
            context.load_verify_locations(_readable(SSL_CA, ca))
        except ssl.SSLError as exc:
            raise ConfigError(SSL_CA, ca, f"a PEM file of CA certificates ({exc})") from None
    if cert:
        _readable(SSL_CERT, cert)
        _readable(SSL_KEY, key)
        try:
            context.load_cert_chain(cert, key, password=password.reveal() or None)
        except ssl.SSLError as exc:
            blame = SSL_KEY_PASSWORD if "decrypt" in str(exc).lower() or password else SSL_KEY
            shown = "***" if blame == SSL_KEY_PASSWORD else key
            raise ConfigError(
                blame, shown, f"the certificate's private key (PEM) and its password ({exc})"
            ) from None
    return TlsSettings(True, ca, cert, key, password, hostname)


def _shown_auth(text: str) -> str:
    """An ``auth`` value as an error may show it: only the known scheme and mechanism words (a
    password may have been written anywhere else in it)."""
    parts = text.split(":")
    safe = parts[:1] if parts[0].lower() in ("none", "digest", "sasl") else []
    if safe and len(parts) > 1 and parts[1].upper() in ("DIGEST-MD5", "GSSAPI"):
        safe.append(parts[1])
    if not safe:
        return REDACTED
    return ":".join(safe) + (":..." if len(parts) > len(safe) else "")


def _parse_auth(value: str, password: str) -> Auth:
    text = value.strip()
    shown = _shown_auth(text)
    if text.lower() == "none":
        return Auth()
    scheme, _, rest = text.partition(":")
    scheme = scheme.lower()
    if scheme == "digest" and rest and ":" not in rest:
        if not password:
            raise ConfigError(AUTH_PASSWORD, "", f"the password of {AUTH}={text}")
        return Auth("digest", "", rest, Secret(password))
    if scheme == "sasl":
        mechanism, _, user = rest.partition(":")
        mechanism = mechanism.upper()
        _needs_module(shown, "puresasl", "pure-sasl", "SASL")
        if mechanism == "GSSAPI":
            _needs_module(shown, "kerberos", "kerberos", "GSSAPI (Kerberos)")
        if mechanism == "DIGEST-MD5" and user and ":" not in user:
            if not password:
                raise ConfigError(AUTH_PASSWORD, "", f"the password of {AUTH}={text}")
            return Auth("sasl", mechanism, user, Secret(password))
        if mechanism == "GSSAPI" and ":" not in user:
            return Auth("sasl", mechanism, user)
    raise ConfigError(AUTH, shown, AUTH_ACCEPTS, checked=True)


def _needs_module(shown: str, module: str, package: str, purpose: str) -> None:
    """A SASL setting whose library is missing fails here, not as a connection time-out."""
    if importlib.util.find_spec(module) is None:
        raise ConfigError(
            AUTH, shown, f"{AUTH_ACCEPTS}; {purpose} needs the {package} package", checked=True
        )


def _parse_acl(value: str, identified: bool) -> AclSetting:
    """``identified``: the connection authenticates (credentials, or a TLS client certificate,
    which ZooKeeper's x509 provider turns into an identity): creator and auth: need one."""
    text = value.strip()
    if text.lower() in ("open", "creator"):
        kind = text.lower()
        if kind == "creator" and not identified:
            raise ConfigError(
                ACL_KEY,
                text,
                f"open, or creator together with an identity in {AUTH} or a TLS client "
                f"certificate in {SSL_CERT}",
            )
        return AclSetting(kind)
    tokens: list[str] = []
    for token in text.split(","):
        token = token.strip()
        if tokens and token.split(":", 1)[0].lower() not in SCHEMES:
            tokens[-1] += "," + token  # an x509 distinguished name holds commas
        else:
            tokens.append(token)
    entries = []
    for token in tokens:
        scheme, _, rest = token.partition(":")
        ident, _, letters = rest.rpartition(":")
        scheme, letters = scheme.lower(), letters.lower()
        perms = 31 if letters == "all" else 0
        if letters != "all":
            for letter in letters:
                perms |= _PERMS.get(letter, 1 << 30)
        ok = scheme in SCHEMES and 0 < perms <= 31 and (ident or scheme == "auth")
        if ok and scheme == "world":
            ok = ident == "anyone"
        if ok and scheme == "digest":
            ok = bool(_DIGEST_ID.match(ident))
        if ok and scheme == "auth" and not identified:
            raise ConfigError(
                ACL_KEY,
                _shown_acl(text),
                f"auth: entries only with an identity in {AUTH} or {SSL_CERT}",
            )
        if not ok:
            raise ConfigError(ACL_KEY, _shown_acl(text), ACL_ACCEPTS)
        entries.append((scheme, ident, perms))
    if not entries:
        raise ConfigError(ACL_KEY, _shown_acl(text), ACL_ACCEPTS)
    return AclSetting("list", tuple(entries))


def parse_security(v: Mapping[str, str], parse_bool) -> ZooKeeperSecurity:
    """The security keys of a conf with every default filled in (``v``)."""
    auth = _parse_auth(str(v[AUTH]), str(v[AUTH_PASSWORD]))
    tls = _parse_tls(v, parse_bool)
    identified = auth.enabled or (tls.enabled and bool(tls.cert_file))
    return ZooKeeperSecurity(tls=tls, auth=auth, acl=_parse_acl(str(v[ACL_KEY]), identified))


#: No TLS, no credentials, open ACLs: Hive's defaults and sparklock's.
PLAIN = ZooKeeperSecurity()

__all__ = [
    "ACL_KEY",
    "AUTH",
    "AUTH_PASSWORD",
    "PLAIN",
    "SSL_CA",
    "SSL_CERT",
    "SSL_ENABLED",
    "SSL_HOSTNAME",
    "SSL_KEY",
    "SSL_KEY_PASSWORD",
    "Secret",
    "ZooKeeperSecurity",
    "parse_security",
]
