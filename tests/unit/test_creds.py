"""Credentials per role (docs/design.md §4) and ownership rows (docs/design.md §8), without OpenBao or Salt.

The OpenBao side is a fake hvac client placed in the run cache under
``salt_proxmox.openbao.client``: its ``read(path)`` answers the KV-v1 / PVE-token-engine shape
``{"data": {"token_id", "secret"}, "lease_id", "lease_duration"}``. Token ids follow
pve-access-control ``PVE::AccessControl::pve_verify_tokenid`` (``user@realm!name``).
"""

from __future__ import annotations

import os
import socket
import time

import hvac.exceptions
import pytest
import requests

from salt_proxmox.errors import DeclarationError
from salt_proxmox.openbao.creds import READ_MIN_LEFT, CredentialBroker, CredentialError, parse_credentials
from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.ownership.rows import CREATING, OWNED, row_key
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.pve.client import Credential, Target

READ_SECRET = "aaaaaaaa-read-secret-0000"
PROVISION_SECRET = "bbbbbbbb-provision-secret-1111"
CLIENT_KEY = "salt_proxmox.openbao.client"


class Clock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeBao:
    """An hvac client stand-in: ``answers`` maps path to the KV-v1 body (or an exception)."""

    def __init__(self, answers: dict[str, object]):
        self.answers = answers
        self.reads: list[str] = []

    def read(self, path: str) -> object:
        self.reads.append(path)
        answer = self.answers[path]
        if isinstance(answer, BaseException):
            raise answer
        return answer


def body(token_id: str, secret: str, lease: object = 300, **data: object) -> dict:
    return {"data": {"token_id": token_id, "secret": secret, **data}, "lease_id": "", "lease_duration": lease}


def bao_target(**extra: object) -> Target:
    return Target(
        "homelab",
        ("https://pve1:8006",),
        credentials={"source": "openbao", "path": "proxmox/creds/", **extra},
    )


def bao_broker(
    answers: dict[str, object], clock: Clock | None = None
) -> tuple[CredentialBroker, FakeBao, dict]:
    fake = FakeBao(answers)
    cache: dict = {CLIENT_KEY: fake}
    broker = CredentialBroker(bao_target(), cache, openbao=None, clock=clock or Clock())
    return broker, fake, cache


STANDARD = {
    "proxmox/creds/read": body("salt@pve!read", READ_SECRET),
    "proxmox/creds/provision": body("salt@pve!provision", PROVISION_SECRET),
}


def assert_no_secret(text: object) -> None:
    for secret in (READ_SECRET, PROVISION_SECRET):
        assert secret not in str(text)


# --------------------------------------------------------------------------------------------
# source: openbao
# --------------------------------------------------------------------------------------------


def test_read_is_minted_once_and_reused() -> None:
    broker, fake, _ = bao_broker(dict(STANDARD))
    first = broker.read()
    assert broker.read() is first
    assert fake.reads == ["proxmox/creds/read"]
    assert (first.token_id, first.secret, first.role, first.lease_seconds) == (
        "salt@pve!read",
        READ_SECRET,
        "read",
        300,
    )
    assert broker.mints == {"read": 1, "provision": 0}


def test_read_is_shared_by_brokers_of_the_same_run() -> None:
    # The cache is Salt's __context__: one read credential per target per run.
    broker, fake, cache = bao_broker(dict(STANDARD))
    first = broker.read()
    again = CredentialBroker(bao_target(), cache, clock=broker.clock)
    assert again.read() is first
    assert fake.reads == ["proxmox/creds/read"]


@pytest.mark.parametrize(
    ("elapsed", "reminted"),
    [
        pytest.param(0, False, id="fresh"),
        pytest.param(300 - READ_MIN_LEFT, False, id="exactly-60s-left"),
        pytest.param(239.5, False, id="60.5s-left"),
        pytest.param(240.5, True, id="59.5s-left"),
        pytest.param(400, True, id="expired"),
    ],
)
def test_read_is_reminted_when_less_than_60s_of_lease_remain(elapsed: float, reminted: bool) -> None:
    clock = Clock()
    broker, fake, _ = bao_broker(dict(STANDARD), clock)
    first = broker.read()
    clock.now += elapsed
    second = broker.read()
    assert (second is not first) is reminted
    assert len(fake.reads) == (2 if reminted else 1)
    if reminted:
        assert second.minted_at == clock.now
        assert broker.read() is second


def test_provision_is_minted_fresh_for_every_write() -> None:
    broker, fake, _ = bao_broker(dict(STANDARD))
    one, two = broker.provision(), broker.provision()
    assert one is not two
    assert fake.reads == ["proxmox/creds/provision", "proxmox/creds/provision"]
    assert (one.token_id, one.role) == ("salt@pve!provision", "provision")
    assert broker.mints["provision"] == 2


def test_provision_lease_shorter_than_the_task_bound_is_refused() -> None:
    broker, _, _ = bao_broker(
        {"proxmox/creds/provision": body("salt@pve!provision", PROVISION_SECRET, lease=120)}
    )
    with pytest.raises(CredentialError) as caught:
        broker.provision(need_seconds=180)
    assert "lease of 120s, shorter than this write's 180s task bound" in str(caught.value)
    assert_no_secret(caught.value)
    assert broker.provision(need_seconds=120).lease_seconds == 120


def test_provision_without_lease_bound_is_not_refused() -> None:
    broker, _, _ = bao_broker(
        {"proxmox/creds/provision": body("salt@pve!provision", PROVISION_SECRET, lease=0)}
    )
    assert broker.provision(need_seconds=10_000).lease_seconds == 0


def test_token_id_full_is_preferred() -> None:
    # Some PVE-token engines answer token_id as the bare name and token_id_full as user@realm!name.
    answer = body("provision", PROVISION_SECRET, token_id_full="salt@pve!provision")
    broker, _, _ = bao_broker({"proxmox/creds/provision": answer})
    credential = broker.provision()
    assert credential.token_id == "salt@pve!provision"
    assert credential.header() == f"PVEAPIToken=salt@pve!provision={PROVISION_SECRET}"


def kv2_body(token_id: str, secret: str) -> dict:
    """A KV version 2 read (OpenBao ``builtin/logical/kv`` ``pathData``): the pair one level down,
    beside ``metadata``, with no lease."""
    return {
        "data": {
            "data": {"token_id": token_id, "secret": secret},
            "metadata": {"created_time": "2026-01-01T00:00:00Z", "destroyed": False, "version": 3},
        },
        "lease_id": "",
        "lease_duration": 0,
    }


def test_a_kv_version_2_answer_is_read_one_level_down() -> None:
    # credentials:path proxmox/data/creds names the data/ segment of a KV v2 mount: the pair is
    # data.data, never "token_id is missing" when it is there, nested.
    broker, _, _ = bao_broker({"proxmox/creds/read": kv2_body("salt@pve!read", READ_SECRET)})
    credential = broker.read()
    assert (credential.token_id, credential.lease_seconds) == ("salt@pve!read", 0)
    assert credential.header() == f"PVEAPIToken=salt@pve!read={READ_SECRET}"


@pytest.mark.parametrize(
    "data",
    [
        pytest.param({"data": {"token_id": "salt@pve!read"}, "metadata": {}}, id="metadata-without-version"),
        pytest.param({"data": "x", "metadata": {"version": 1}}, id="inner-data-not-a-mapping"),
        pytest.param(
            {"data": {"token_id": "salt@pve!read"}, "metadata": {"version": 1}, "secret": "s"},
            id="a-third-key",
        ),
    ],
)
def test_only_the_kv_version_2_shape_is_unwrapped(data: dict) -> None:
    # A KV v1 secret that happens to hold keys called data and metadata is not KV v2.
    broker, _, _ = bao_broker({"proxmox/creds/read": {"data": data, "lease_duration": 0}})
    with pytest.raises(CredentialError, match="token_id is missing"):
        broker.read()


def test_nothing_at_a_kv_version_2_path_without_data_names_the_segment() -> None:
    broker, _, _ = bao_broker({"proxmox/creds/read": None})
    with pytest.raises(CredentialError, match=r"<mount>/data/<path>: name that data/ segment"):
        broker.read()


def test_lease_id_is_kept_but_never_shown() -> None:
    answer = {**body("salt@pve!read", READ_SECRET), "lease_id": "proxmox/creds/read/xyz"}
    broker, _, _ = bao_broker({"proxmox/creds/read": answer})
    credential = broker.read()
    assert credential.lease_id == "proxmox/creds/read/xyz"
    assert "xyz" not in repr(credential) and READ_SECRET not in repr(credential)


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        pytest.param(None, "answered nothing", id="nothing-at-path"),
        pytest.param({"lease_duration": 300}, "got no mapping", id="no-data"),
        pytest.param({"data": None}, "got no mapping", id="null-data"),
        pytest.param({"data": {"token_id": "salt@pve!read"}}, "secret is missing", id="no-secret"),
        pytest.param(
            {"data": {"token_id": "salt@pve!read", "secret": ""}}, "secret is missing", id="empty-secret"
        ),
        pytest.param(
            {"data": {"token_id": "salt@pve!read", "secret": 5}}, "secret is missing", id="secret-not-text"
        ),
        pytest.param(body("salt@pve", READ_SECRET), "not user@realm!name", id="token-id-without-bang"),
        pytest.param(body("read", READ_SECRET), "not user@realm!name", id="bare-token-name"),
        pytest.param({"data": {"secret": READ_SECRET}}, "token_id is missing", id="no-token-id"),
        pytest.param(body("salt@pve!read", READ_SECRET, lease="300"), "lease_duration", id="lease-as-text"),
        pytest.param(body("salt@pve!read", READ_SECRET, lease=-1), "lease_duration", id="negative-lease"),
        pytest.param(body("salt@pve!read", READ_SECRET, lease=True), "lease_duration", id="lease-bool"),
    ],
)
def test_malformed_answers_raise_without_the_secret(answer: object, fragment: str) -> None:
    broker, _, _ = bao_broker({"proxmox/creds/read": answer})
    with pytest.raises(CredentialError) as caught:
        broker.read()
    assert fragment in str(caught.value)
    assert "proxmox/creds/read" in str(caught.value)
    assert_no_secret(caught.value)
    assert_no_secret(repr(caught.value))


@pytest.mark.parametrize(
    ("failure", "fragment"),
    [
        pytest.param(
            hvac.exceptions.Forbidden("permission denied " + READ_SECRET),
            "permission denied (HTTP 403)",
            id="403",
        ),
        pytest.param(
            hvac.exceptions.InvalidPath("no handler " + READ_SECRET), "no such path (HTTP 404)", id="404"
        ),
        pytest.param(hvac.exceptions.VaultDown("sealed"), "sealed", id="503"),
        pytest.param(requests.exceptions.ConnectionError("refused " + READ_SECRET), "unreachable", id="down"),
    ],
)
def test_openbao_failures_are_secret_free_credential_errors(failure: Exception, fragment: str) -> None:
    broker, _, _ = bao_broker({"proxmox/creds/read": failure})
    with pytest.raises(CredentialError) as caught:
        broker.read()
    assert fragment in str(caught.value)
    assert_no_secret(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_openbao_source_without_client_or_config_is_refused() -> None:
    broker = CredentialBroker(bao_target(), {}, openbao=None)
    with pytest.raises(CredentialError, match="no openbao: block is configured"):
        broker.read()


# --------------------------------------------------------------------------------------------
# source: static
# --------------------------------------------------------------------------------------------


def static_target(**roles: object) -> Target:
    return Target("homelab", ("https://pve1:8006",), credentials={"source": "static", **roles})


READ_PAIR = {"token_id": "salt@pve!read", "secret": READ_SECRET}
PROVISION_PAIR = {"token_id": "salt@pve!provision", "secret": PROVISION_SECRET}


def test_static_read_is_reused_and_provision_handed_out_per_write() -> None:
    broker = CredentialBroker(static_target(read=READ_PAIR, provision=PROVISION_PAIR), {})
    assert broker.read() is broker.read()
    one, two = broker.provision(need_seconds=180), broker.provision()
    assert one is not two and one.secret == PROVISION_SECRET
    assert broker.mints == {"read": 1, "provision": 2}


def test_static_without_provision_fails_at_the_write() -> None:
    broker = CredentialBroker(static_target(read=READ_PAIR), {})
    assert broker.read().token_id == "salt@pve!read"
    with pytest.raises(CredentialError, match="no static provision credential"):
        broker.provision()


@pytest.mark.parametrize(
    ("credentials", "key"),
    [
        pytest.param({}, "proxmox:targets:homelab:credentials:source", id="no-source"),
        pytest.param({"source": "vault"}, "proxmox:targets:homelab:credentials:source", id="unknown-source"),
        pytest.param(
            {"source": "static"}, "proxmox:targets:homelab:credentials:read", id="static-without-read"
        ),
        pytest.param(
            {"source": "static", "read": READ_PAIR, "write": READ_PAIR},
            "proxmox:targets:homelab:credentials: unknown key(s) write",
            id="static-unknown-role",
        ),
        pytest.param(
            {"source": "static", "read": {"token_id": "salt@pve", "secret": READ_SECRET}},
            "proxmox:targets:homelab:credentials:read",
            id="static-bad-token-id",
        ),
        pytest.param(
            {"source": "static", "read": READ_PAIR, "provision": {"token_id": "salt@pve!p"}},
            "proxmox:targets:homelab:credentials:provision",
            id="static-provision-without-secret",
        ),
        pytest.param(
            {"source": "openbao"}, "proxmox:targets:homelab:credentials:path", id="openbao-without-path"
        ),
        pytest.param(
            {"source": "openbao", "path": "/"},
            "proxmox:targets:homelab:credentials:path",
            id="openbao-root-path",
        ),
        pytest.param(
            {"source": "openbao", "path": "p", "read": READ_PAIR},
            "proxmox:targets:homelab:credentials: unknown key(s) read",
            id="openbao-unknown-key",
        ),
    ],
)
def test_parse_credentials_errors_name_the_key(credentials: dict, key: str) -> None:
    target = Target("homelab", ("https://pve1:8006",), credentials=credentials)
    with pytest.raises(DeclarationError) as caught:
        parse_credentials(target)
    assert key in str(caught.value)
    assert_no_secret(caught.value)
    with pytest.raises(DeclarationError):
        CredentialBroker(target, {})


def test_parse_credentials_normalises_the_path() -> None:
    assert parse_credentials(bao_target()) == {"source": "openbao", "path": "proxmox/creds"}
    assert parse_credentials(static_target(read=READ_PAIR)) == {"source": "static"}


def test_credential_defaults() -> None:
    credential = Credential("salt@pve!read", READ_SECRET)
    assert (credential.role, credential.lease_seconds, credential.lease_id) == ("read", 0, "")


# --------------------------------------------------------------------------------------------
# ownership rows (docs/design.md §8)
# --------------------------------------------------------------------------------------------

DECLARED = {"hostname": "web", "node": "pve1", "vmid": 150}


def test_row_key() -> None:
    assert row_key("homelab", "lxc", 150) == "homelab/lxc/150"


def test_mark_creating_then_owned_keeps_the_instance_id() -> None:
    store = MemoryStore()
    ownership = Ownership(store)
    key = row_key("homelab", "lxc", 150)
    instance = ownership.mark_creating(key, "web", DECLARED)
    row = ownership.row(key)
    assert row == {
        "phase": CREATING,
        "instance": instance,
        "state_id": "web",
        "declared": DECLARED,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started": row["started"],
    }
    assert abs(row["started"] - time.time()) < 60
    ownership.mark_owned(key, "web", {**DECLARED, "memory": "1024"})
    row = ownership.row(key)
    assert (row["phase"], row["instance"], row["declared"]["memory"]) == (OWNED, instance, "1024")
    assert store.saves == 2


def test_mark_owned_without_an_earlier_row_makes_an_instance_id() -> None:
    ownership = Ownership(MemoryStore())
    ownership.mark_owned("homelab/lxc/150", "web", DECLARED)
    instance = ownership.row("homelab/lxc/150")["instance"]
    assert isinstance(instance, str) and len(instance) == 36


def test_for_state_finds_the_row_by_state_id_within_target_and_family() -> None:
    ownership = Ownership(
        MemoryStore(
            {
                "homelab/lxc/150": {"phase": OWNED, "instance": "a", "state_id": "web", "declared": {}},
                "homelab/lxc/151": {"phase": OWNED, "instance": "b", "state_id": "dns", "declared": {}},
                "homelab/qemu/300": {"phase": OWNED, "instance": "c", "state_id": "web", "declared": {}},
                "lab2/lxc/150": {"phase": OWNED, "instance": "d", "state_id": "web", "declared": {}},
                "homelab/lxc/999": "not a row",
            }
        )
    )
    assert ownership.for_state("homelab", "lxc", "web") == (
        "homelab/lxc/150",
        {"phase": OWNED, "instance": "a", "state_id": "web", "declared": {}},
    )
    assert ownership.for_state("homelab", "lxc", "dns")[0] == "homelab/lxc/151"
    assert ownership.for_state("homelab", "lxc", "mail") is None
    assert ownership.row("homelab/lxc/999") is None


def test_forget_drops_only_that_row() -> None:
    store = MemoryStore({"homelab/lxc/150": {"phase": OWNED}, "homelab/lxc/151": {"phase": OWNED}})
    ownership = Ownership(store)
    assert ownership.forget("homelab/lxc/150") is True
    assert ownership.forget("homelab/lxc/150") is False
    assert list(store.rows) == ["homelab/lxc/151"]
    assert store.saves == 1


def test_memory_store_hands_out_copies() -> None:
    store = MemoryStore({"k": {"declared": {"a": 1}}})
    store.load()["k"]["declared"]["a"] = 2
    assert store.rows["k"]["declared"]["a"] == 1
