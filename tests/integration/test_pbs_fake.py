"""The staging PBS fake answers as proxmox-backup does (tests/support/pbs.py): these pin the PBS
behaviour the product relies on, each beside its source."""

from __future__ import annotations

import hashlib
import socket
import ssl
from urllib.parse import quote, urlsplit

import requests

from tests.support.pbs import ServedPbs


def call(served: ServedPbs, token: tuple[str, str], method: str, where: str, **data) -> requests.Response:
    """One call with ``Authorization: PBSAPIToken=<id>:<secret>`` (src/server/auth.rs)."""
    return requests.request(
        method,
        f"{served.url}/api2/json/{where}",
        data=data or None,
        headers={"Authorization": f"PBSAPIToken={token[0]}:{token[1]}"},
        verify=served.cafile,
        timeout=10,
    )


def test_the_certificate_fingerprint_is_the_served_certificates_sha256(fresh_pbs):
    """src/api2/node/certificates.rs get_info (Sys.Modify on /system/certificates): fingerprint."""
    answer = call(fresh_pbs, fresh_pbs.read_token, "GET", "nodes/localhost/certificates/info")
    assert answer.status_code == 200
    (info,) = answer.json()["data"]
    parts = urlsplit(fresh_pbs.url)
    context = ssl.create_default_context(cafile=fresh_pbs.cafile)
    raw = socket.create_connection((parts.hostname, parts.port))
    with context.wrap_socket(raw, server_hostname=parts.hostname) as tls:
        der = tls.getpeercert(binary_form=True)
    digest = hashlib.sha256(der).hexdigest()
    assert info["fingerprint"] == ":".join(digest[i : i + 2] for i in range(0, 64, 2))


def test_a_token_secret_is_answered_once_and_a_second_create_is_refused(fresh_pbs):
    """src/api2/access/user.rs generate_token: {tokenid, value}; `token '<name>' for user '<userid>'
    already exists.`; read_token answers no secret."""
    fresh_pbs.pbs.users.add("pve-backup@pbs")
    path = f"access/users/{quote('pve-backup@pbs')}/token/lab"
    made = call(fresh_pbs, fresh_pbs.provision_token, "POST", path)
    assert made.status_code == 200
    assert set(made.json()["data"]) == {"tokenid", "value"}
    assert made.json()["data"]["tokenid"] == "pve-backup@pbs!lab"
    again = call(fresh_pbs, fresh_pbs.provision_token, "POST", path)
    assert (again.status_code, again.text) == (400, "token 'lab' for user 'pve-backup@pbs' already exists.")
    read = call(fresh_pbs, fresh_pbs.provision_token, "GET", path).json()["data"]
    assert "value" not in read and made.json()["data"]["value"] not in str(read)
    denied = call(fresh_pbs, fresh_pbs.read_token, "POST", f"access/users/{quote('pve-backup@pbs')}/token/x")
    assert denied.status_code == 403


def test_an_acl_entry_names_an_existing_token_and_a_role(fresh_pbs):
    """src/api2/access/acl.rs update_acl: `no such API token.`; read_acl lists the entry."""
    missing = call(
        fresh_pbs,
        fresh_pbs.provision_token,
        "PUT",
        "access/acl",
        path="/datastore/store1",
        role="DatastoreBackup",
        **{"auth-id": "nobody@pbs!x"},
    )
    assert (missing.status_code, missing.text) == (400, "no such API token.")
    fresh_pbs.pbs.add_token("pve-backup@pbs!lab")
    done = call(
        fresh_pbs,
        fresh_pbs.provision_token,
        "PUT",
        "access/acl",
        path="/datastore/store1",
        role="DatastoreBackup",
        **{"auth-id": "pve-backup@pbs!lab"},
    )
    assert done.status_code == 200
    rows = call(fresh_pbs, fresh_pbs.provision_token, "GET", "access/acl?path=/datastore/store1&exact=1")
    assert {
        "path": "/datastore/store1",
        "ugid": "pve-backup@pbs!lab",
        "ugid_type": "user",
        "roleid": "DatastoreBackup",
        "propagate": True,
    } in rows.json()["data"]


def test_datastore_create_refusals_and_its_task(fresh_pbs):
    """src/api2/config/datastore.rs create_datastore: Datastore.Allocate on /datastore, `already
    exists.`, DATASTORE_SCHEMA; a create-datastore task whose worker fails on a path holding data."""
    token = fresh_pbs.provision_token
    assert (
        call(
            fresh_pbs, fresh_pbs.read_token, "POST", "config/datastore", name="st1", path="/srv/s1"
        ).status_code
        == 403
    )
    upid = call(fresh_pbs, token, "POST", "config/datastore", name="st1", path="/srv/s1").json()["data"]
    assert upid.startswith("UPID:") and ":create-datastore:st1:" in upid
    status = call(fresh_pbs, token, "GET", f"nodes/localhost/tasks/{quote(upid, safe='')}/status").json()[
        "data"
    ]
    assert (status["status"], status["exitstatus"]) == ("stopped", "OK")
    # The task's owner reads it; another token needs Sys.Audit on /system/tasks (get_task_status).
    other = call(
        fresh_pbs, fresh_pbs.read_token, "GET", f"nodes/localhost/tasks/{quote(upid, safe='')}/status"
    )
    assert other.status_code == 200  # the read token holds Audit (Sys.Audit) on /
    dup = call(fresh_pbs, token, "POST", "config/datastore", name="st1", path="/srv/other")
    assert (dup.status_code, dup.text) == (400, "parameter 'name': datastore 'st1' already exists.")
    assert call(fresh_pbs, token, "POST", "config/datastore", name="x", path="/srv/x").status_code == 400
    fresh_pbs.pbs.seed_data("/srv/used")
    upid = call(fresh_pbs, token, "POST", "config/datastore", name="st2", path="/srv/used").json()["data"]
    assert fresh_pbs.pbs.tasks[upid]["exitstatus"] == "datastore path not empty"
    assert "st2" not in fresh_pbs.pbs.datastores
    missing = call(fresh_pbs, token, "GET", "config/datastore/nope")
    assert (missing.status_code, missing.text) == (400, "no such datastore 'nope'")
