"""``managers/zookeeper/security.py``: parsing of the ZooKeeper security keys (accepted forms,
kazoo options, errors naming keys)."""

from __future__ import annotations

import importlib.util

import pytest

from sparklock.config import SparkLockConfig
from sparklock.errors import ConfigError
from sparklock.managers.zookeeper.wire.security import ACL_KEY, AUTH, AUTH_PASSWORD, SSL_CERT
from tests.support.sasl import needs_pure_sasl

ZOOKEEPER = {"spark.sparklock.manager": "zookeeper"}


def parsed(conf: dict[str, str]):
    return SparkLockConfig.from_conf({**ZOOKEEPER, **conf}).backend.security


def test_defaults_are_hive_s_plain_open_connection():
    sec = parsed({})
    assert sec.plain and sec.kazoo_options() == {}
    assert sec.describe() == "tls=off, auth=none (unauthenticated), acl=open"


def test_digest_identity_and_creator_acl_as_kazoo_options():
    sec = parsed({AUTH: "digest:alice", AUTH_PASSWORD: "pw", ACL_KEY: "creator"})
    options = sec.kazoo_options()
    assert options["auth_data"] == [("digest", "alice:pw")]
    assert [(a.id.scheme, a.id.id, a.perms) for a in options["default_acl"]] == [
        ("auth", "", 31),
        ("world", "anyone", 1),
    ]
    assert "pw" not in repr(sec) and sec.describe() == "tls=off, auth=digest:alice, acl=creator"


@needs_pure_sasl
def test_sasl_digest_md5_options_are_fresh_each_time():
    sec = parsed({AUTH: "sasl:digest-md5:alice", AUTH_PASSWORD: "pw"})
    first = sec.kazoo_options()["sasl_options"]
    assert first == {"mechanism": "DIGEST-MD5", "username": "alice", "password": "pw"}
    first["service"] = "zookeeper"  # kazoo adds this to the dict it is given
    assert "service" not in sec.kazoo_options()["sasl_options"]


def test_gssapi_needs_the_kerberos_package_or_maps_to_kazoo():
    conf = {AUTH: "sasl:GSSAPI:spark/host@EXAMPLE.COM"}
    if importlib.util.find_spec("kerberos") is None or importlib.util.find_spec("puresasl") is None:
        with pytest.raises(ConfigError, match="package") as err:
            parsed(conf)
        assert AUTH in str(err.value)
    else:
        options = parsed(conf).kazoo_options()["sasl_options"]
        assert options == {"mechanism": "GSSAPI", "principal": "spark/host@EXAMPLE.COM"}


def test_acl_list_with_every_scheme():
    acl = (
        "world:anyone:r,auth::cdrwa,digest:bob:V55/p2T0OpjQ+low3NVAH4aLvm0=:all,"
        "ip:10.0.0.0/8:r,sasl:spark:cdrw,x509:CN=client,OU=data,O=example:cdrwa"
    )
    sec = parsed({AUTH: "digest:alice", AUTH_PASSWORD: "pw", ACL_KEY: acl})
    entries = [(a.id.scheme, a.id.id, a.perms) for a in sec.kazoo_options()["default_acl"]]
    assert entries == [
        ("world", "anyone", 1),
        ("auth", "", 31),
        ("digest", "bob:V55/p2T0OpjQ+low3NVAH4aLvm0=", 31),
        ("ip", "10.0.0.0/8", 1),
        ("sasl", "spark", 15),
        ("x509", "CN=client,OU=data,O=example", 31),
    ]
    assert "digest:bob:***" in sec.describe() and "V55/" not in sec.describe()


@pytest.mark.parametrize(
    "conf,key,accepted",
    [
        ({ACL_KEY: "creator"}, ACL_KEY, AUTH),
        ({ACL_KEY: "auth::cdrwa"}, ACL_KEY, AUTH),
        ({ACL_KEY: "world:everyone:r"}, ACL_KEY, "scheme:id:perms"),
        ({ACL_KEY: "sasl:spark:xyz"}, ACL_KEY, "cdrwa"),
        ({ACL_KEY: "digest:bob:cleartext:cdrwa"}, ACL_KEY, "scheme:id:perms"),
        ({ACL_KEY: ""}, ACL_KEY, "open, creator"),
        ({AUTH: "digest:alice"}, AUTH_PASSWORD, "password"),
        ({AUTH: "kerberos"}, AUTH, "sasl:GSSAPI"),
        ({AUTH: "digest:"}, AUTH, "digest:<user>"),
        ({"spark.sparklock.zookeeper.ssl.enabled": "true", SSL_CERT: "/x.pem"}, SSL_CERT, "PEM"),
    ],
)
def test_bad_values_name_the_key(conf, key, accepted):
    with pytest.raises(ConfigError) as err:
        parsed(conf)
    assert key in str(err.value) and accepted in str(err.value)


def test_different_credentials_are_different_managers():
    def key(password: str) -> tuple:
        conf = {"spark.sparklock.manager": "zookeeper", AUTH: "digest:alice"}
        return SparkLockConfig.from_conf({**conf, AUTH_PASSWORD: password}).settings_key()

    first, second = "s3cret-first", "s3cret-second"  # text no other field's repr holds
    assert key(first) != key(second) and key(first) == key(first)
    assert first not in repr(key(first))
