"""Both sides in one plan: a ``pbs`` storage wired to a PBS datastore (salt_proxmox/pbs/wiring.py), run
as a minion runs it (tests/support/saltworld.py) against the fake cluster, the staging PBS fake and a real
OpenBao dev server: the PBS token is made once, its secret kept in OpenBao and written to PVE, nowhere
else; the second plan is clean."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs

import pytest
import requests

from tests.conformance.contract import leak_places
from tests.faults.harness import debug_log, leaks
from tests.support.guests import static_targets
from tests.support.pbs import pbs_targets
from tests.support.saltworld import Low, SaltWorld

TOKEN_ID = "pve-backup@pbs!pve-lab"
PATH = "secret/data/pve/pbs/backups"
DATASTORE = Low("pbs_datastore", "present", {"name": "store1", "path": "/mnt/datastore/store1"})


def storage(**over) -> Low:
    declared = {
        "name": "backups",
        "type": "pbs",
        "server": "192.0.2.30",
        "datastore": "store1",
        "content": "backup",
        "pbs_target": "backup1",
        "pbs_user": "pve-backup@pbs",
        "pbs_secret_path": PATH,
        **over,
    }
    return Low("proxmox_storage", "present", declared)


@pytest.fixture
def world(fresh_cluster, fresh_pbs, openbao, tmp_path: Path) -> SaltWorld:
    fresh_pbs.pbs.users.add("pve-backup@pbs")
    openbao.client().secrets.kv.v2.delete_metadata_and_all_versions(
        path="pve/pbs/backups", mount_point="secret"
    )
    config = {
        "proxmox": {"targets": static_targets(fresh_cluster), "pbs_targets": pbs_targets(fresh_pbs)},
        "openbao": {"url": openbao.url, "auth": {"method": "token", "token": openbao.root_token}},
    }
    return SaltWorld(config, {}, tmp_path / "salt_proxmox_owned.json")


def writes(cluster, pbs, marks) -> list[tuple[str, str, object]]:
    pve = [(m, p, b) for m, p, b in cluster.pve.requests[marks[0] :] if m != "GET"]
    return pve + [(m, p, b) for m, p, b in pbs.pbs.requests[marks[1] :] if m != "GET"]


def marks(cluster, pbs) -> tuple[int, int]:
    return len(cluster.pve.requests), len(pbs.pbs.requests)


def bao_secret(openbao) -> dict:
    read = openbao.client().secrets.kv.v2.read_secret_version(
        path="pve/pbs/backups", mount_point="secret", raise_on_deleted_version=True
    )
    return read["data"]["data"]


@pytest.fixture
def wire(monkeypatch) -> list[tuple[str, str, bytes]]:
    """What this process sends to PVE's storage API, bodies unredacted (fakepve's own log redacts the
    sensitive options, as PVE's extract_sensitive_params keeps them apart)."""
    sent: list[tuple[str, str, bytes]] = []
    original = requests.Session.send

    def send(session, prepared, **kwargs):
        if "/api2/json/storage" in prepared.url:
            body = prepared.body if isinstance(prepared.body, bytes) else str(prepared.body or "").encode()
            sent.append((prepared.method, prepared.url, body))
        return original(session, prepared, **kwargs)

    monkeypatch.setattr(requests.Session, "send", send)
    return sent


def password_sent(wire, method: str) -> str | None:
    for m, _url, body in reversed(wire):
        if m == method:
            return parse_qs(body.decode()).get("password", [None])[0]
    return None


def test_the_token_secret_is_in_openbao_and_pve_and_nowhere_else_and_the_second_plan_is_clean(
    world, fresh_cluster, fresh_pbs, openbao, wire
):
    run = [DATASTORE, storage()]
    with debug_log() as lines:
        start = marks(fresh_cluster, fresh_pbs)
        plan = world.run(run, test=True)
        assert [r["result"] for r in plan] == [None, None], plan
        assert writes(fresh_cluster, fresh_pbs, start) == []
        assert {"pbs_token", "pbs_secret", "pbs_acl", "created"} <= set(plan[1]["changes"])
        applied = world.run(run, test=False)
        assert [r["result"] for r in applied] == [True, True], applied
        start = marks(fresh_cluster, fresh_pbs)
        again = world.run(run, test=True)
        assert [(r["result"], r["changes"]) for r in again] == [(True, {}), (True, {})], again
        assert writes(fresh_cluster, fresh_pbs, start) == []
    secret = fresh_pbs.pbs.token_secrets[TOKEN_ID]
    kept = bao_secret(openbao) == {"token_id": TOKEN_ID, "secret": secret}
    assert kept, "OpenBao does not hold the token's secret"
    sent = password_sent(wire, "POST") == secret
    assert sent, "the storage's create did not send the token's secret as its password"
    stored = fresh_cluster.pve.storages["backups"]
    assert (stored["username"], stored["fingerprint"]) == (TOKEN_ID, fresh_pbs.fingerprint)
    # The least role PVE needs to back up and restore, for the token and the user capping it.
    acl = {(e[0], e[1], e[2]) for e in fresh_pbs.pbs.acl}
    assert {
        ("/datastore/store1", TOKEN_ID, "DatastoreBackup"),
        ("/datastore/store1", "pve-backup@pbs", "DatastoreBackup"),
    } <= acl
    places = leak_places(world, plan + applied + again, lines)
    assert leaks(places, [secret]) == []


def test_a_new_serial_rotates_the_token_and_writes_the_new_secret(
    world, fresh_cluster, fresh_pbs, openbao, wire
):
    run = [DATASTORE, storage()]
    assert [r["result"] for r in world.run(run, test=False)] == [True, True]
    old = fresh_pbs.pbs.token_secrets[TOKEN_ID]
    rotated = [DATASTORE, storage(pbs_token_serial=2)]
    plan = world.run(rotated, test=True)
    assert plan[1]["result"] is None and plan[1]["changes"]["pbs_token"]["old"] == TOKEN_ID, plan
    assert [r["result"] for r in world.run(rotated, test=False)] == [True, True]
    new = fresh_pbs.pbs.token_secrets[TOKEN_ID]
    rotated_ok = new != old and bao_secret(openbao)["secret"] == new and password_sent(wire, "PUT") == new
    assert rotated_ok, "the new secret is not the one OpenBao keeps and the storage's update sent"
    again = world.run(rotated, test=True)
    assert [(r["result"], r["changes"]) for r in again] == [(True, {}), (True, {})], again


def test_a_token_whose_secret_openbao_lacks_is_refused_naming_the_serial(world, fresh_pbs):
    fresh_pbs.pbs.add_token(TOKEN_ID)
    _, refused = world.run([DATASTORE, storage()], test=True)
    assert refused["result"] is False and "Raise pbs_token_serial" in refused["comment"]


def test_what_the_product_writes_itself_is_refused_by_name(world):
    (refused,) = world.run([storage(username="root@pam")], test=True)
    assert refused["result"] is False and "username:" in refused["comment"]


def test_a_datastore_neither_on_pbs_nor_in_this_run_is_refused(world):
    (refused,) = world.run([storage()], test=True)
    assert refused["result"] is False and "has no datastore store1" in refused["comment"]


def test_prune_backups_asks_the_power_user_role(world, fresh_pbs):
    """PBSPlugin.pm prune_backups runs on PBS: Datastore.Prune (DatastorePowerUser)."""
    run = [DATASTORE, storage(**{"prune-backups": "keep-last=3"})]
    assert [r["result"] for r in world.run(run, test=False)] == [True, True]
    assert ("/datastore/store1", TOKEN_ID, "DatastorePowerUser", True) in fresh_pbs.pbs.acl


def test_a_storage_the_plan_refuses_gets_no_pbs_write_either(world, fresh_pbs):
    """The apply sends only what its plan listed: a wired storage refused at plan (its datastore is a
    fixed option, PBSPlugin.pm) makes no token, stores no secret and grants nothing."""
    assert [r["result"] for r in world.run([DATASTORE, storage()], test=False)] == [True, True]
    other = Low("pbs_datastore", "present", {"name": "store2", "path": "/mnt/datastore/store2"})
    moved = [DATASTORE, other, storage(datastore="store2", pbs_token_serial=2)]
    start = len(fresh_pbs.pbs.requests)
    for test in (True, False):
        returns = world.run(moved, test=test)
        assert returns[2]["result"] is False and "fixed parameter 'datastore'" in returns[2]["comment"], (
            returns
        )
    sent = [(m, p) for m, p, _ in fresh_pbs.pbs.requests[start:] if m != "GET"]
    assert sent == [("POST", "config/datastore")], sent  # store2's create alone
