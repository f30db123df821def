"""The pure half of the PBS families: the client's header and error body, the datastore declaration
and update form (proxmox-backup ``src/api2/config/datastore.rs``), and the wiring's checks."""

from __future__ import annotations

import pytest
import requests

from salt_proxmox.errors import DeclarationError
from salt_proxmox.pbs import wiring
from salt_proxmox.pbs.client import PbsClient, parse_pbs_target
from salt_proxmox.pbs.datastore import create, declare, update
from salt_proxmox.pve.client import Credential
from salt_proxmox.pve.errors import PveError


def _client() -> PbsClient:
    return PbsClient(parse_pbs_target("b", {"members": ["https://pbs"], "credentials": {"source": "static"}}))


def test_the_token_goes_as_pbs_api_token_with_a_colon():
    """src/server/auth.rs extract_auth_data: ``PBSAPIToken=<user@realm!name>:<secret>``."""
    header = _client().authorization(Credential("u@pbs!t", "s3cr3t"))
    assert header == "PBSAPIToken=u@pbs!t:s3cr3t"


def test_an_error_is_its_plain_body():
    """proxmox-rest-server formatter.rs format_error: the status and the message as the body."""
    response = requests.Response()
    response.status_code, response._content, response.reason = 400, b"no such datastore 'x'", "Bad Request"
    with pytest.raises(PveError) as raised:
        _client().decode("GET", "config/datastore/x", response, "https://pbs:8007", False)
    assert (raised.value.status, raised.value.message) == (400, "no such datastore 'x'")


def _error(status: int, body: bytes, reason: str) -> PveError:
    response = requests.Response()
    response.status_code, response._content, response.reason = status, body, reason
    with pytest.raises(PveError) as raised:
        _client().decode("GET", "config/datastore/x", response, "https://pbs:8007", False)
    return raised.value


@pytest.mark.parametrize(
    ("status", "body", "names"),
    [
        # proxmox-rest-server: a privilege the token lacks is 403 before the handler runs; PBS grants
        # with `proxmox-backup-manager acl update <path> <role> --auth-id <token>` (docs/user-management.rst).
        (403, b"permission check failed", "proxmox-backup-manager acl update"),
        # src/server/auth.rs: a token that does not authenticate is 401; a new one is made with
        # `proxmox-backup-manager user generate-token`.
        (401, b"authentication failed - invalid token value", "proxmox-backup-manager user generate-token"),
        # formatter.rs format_error: any handler error is a 400 with its message, not a schema refusal.
        (400, b"unable to open file '/etc/proxmox-backup/datastore.cfg'", "PBS refused the call"),
        # A gateway in front of proxmox-backup-proxy (the API on 8007).
        (502, b"<html>502 Bad Gateway</html>", "systemctl status proxmox-backup-proxy"),
        (500, b"internal error", "journalctl -u proxmox-backup-proxy"),
    ],
)
def test_an_error_names_pbss_remedy_never_pves(status, body, names):
    """The remedy of a PBS answer names PBS's own tools: no pveum, pveproxy or PVE schema."""
    text = str(_error(status, body, "Reason"))
    assert names in text, text
    assert not any(word in text for word in ("pveum", "pveproxy", "PVE")), text


def test_a_pbs_wording_with_a_remedy_of_its_own_keeps_it():
    """update_datastore's digest check (detect_modified_configuration_file) says plan again, as PVE's."""
    text = str(_error(400, b"detected modified configuration - file changed by other user? Try again.", "x"))
    assert "plan again" in text and "PVE" not in text


def test_a_datastore_name_and_path_are_checked_before_anything_is_sent():
    """DATASTORE_SCHEMA: 3 to 32 safe characters; create_datastore: an absolute path."""
    with pytest.raises(DeclarationError, match="name:"):
        declare("s", "b", name="ab", path="/srv/ab")
    with pytest.raises(DeclarationError, match="absolute path"):
        declare("s", "b", name="abc", path="srv/abc")
    with pytest.raises(DeclarationError, match="keep-last"):
        declare("s", "b", name="abc", path="/srv/abc", **{"keep-last": 0})


def test_an_update_sends_what_differs_deletes_what_is_cleared_and_never_the_fixed_or_prune_keys():
    """update_datastore: DataStoreConfigUpdater has no path/backend; keep-* and prune-schedule are
    refused there (``replaced by prune jobs``); ``delete`` lists the cleared keys."""
    decl = declare(
        "s",
        "b",
        name="abc",
        path="/srv/other",
        backend="type=s3,client=c,bucket=b",
        comment=None,
        **{"gc-schedule": "weekly", "keep-last": 3, "verify-new": True},
    )
    live = {"path": "/srv/abc", "backend": "", "comment": "old", "gc-schedule": "daily", "verify-new": 1}
    call = update(decl, live)
    assert call is not None and call.method == "PUT"
    assert call.form == {"gc-schedule": "weekly", "delete": ["comment"]}
    matching = update(declare("s", "b", name="abc", path="/srv/abc", **{"gc-schedule": "daily"}), live)
    assert matching is None
    made = create(decl).form
    assert made["keep-last"] == "3" and made["path"] == "/srv/other" and made["name"] == "abc"


@pytest.mark.parametrize(
    ("declared", "wired", "words"),
    [
        ({"type": "nfs", "datastore": "s"}, {}, "only a pbs storage"),
        ({"type": "pbs", "datastore": "s", "password": "x"}, {}, "password:"),
        ({"type": "pbs", "datastore": "s"}, {"pbs_user": "nobody"}, "pbs_user:"),
        ({"type": "pbs", "datastore": "s"}, {"pbs_secret_path": "secret/pbs"}, "pbs_secret_path:"),
        ({"type": "pbs", "datastore": "s"}, {"pbs_token_serial": "2"}, "pbs_token_serial:"),
    ],
)
def test_the_wiring_refuses_by_name(declared, wired, words):
    base = {"pbs_target": "b", "pbs_user": "pve@pbs", "pbs_secret_path": "secret/data/pbs/s"}
    with pytest.raises(DeclarationError, match=words):
        wiring.check("lab", declared, {**base, **wired})


def test_the_token_is_this_clusters_and_the_role_the_least_pve_needs():
    """pbs-api-types acl.rs: DatastoreBackup is Datastore.Backup (back up, restore owned backups);
    PBSPlugin.pm prune_backups needs Datastore.Prune (DatastorePowerUser)."""
    wired = wiring.check(
        "lab one",
        {"type": "pbs", "datastore": "s"},
        {"pbs_target": "b", "pbs_user": "pve@pbs", "pbs_secret_path": "secret/data/pbs/s"},
    )
    assert (wired["token_id"], wired["role"], wired["serial"]) == (
        "pve@pbs!pve-lab-one",
        "DatastoreBackup",
        1,
    )
    assert wiring.role_for({"prune-backups": "keep-last=3"}) == "DatastorePowerUser"


def _answer(status: int, body: bytes) -> requests.Response:
    response = requests.Response()
    response.status_code, response._content, response.reason = status, body, "OK"
    return response


def test_the_client_s_own_sentences_name_pbs_never_pve():
    """What the shared client says of a malformed answer, an uncertain write and a task names PBS's
    server (proxmox-backup-proxy on 8007) and ``proxmox-backup-manager task list|log``, never pvesh."""
    from salt_proxmox.errors import Uncertain
    from salt_proxmox.pve.errors import PveMalformed
    from salt_proxmox.pve.tasks import TaskFailed, await_task, start_task

    client = _client()
    with pytest.raises(PveMalformed) as malformed:
        client.decode(
            "GET", "config/datastore", _answer(200, b"<html>portal</html>"), "https://pbs:8007", False
        )
    with pytest.raises(Uncertain) as uncertain:
        client.decode(
            "POST", "config/datastore", _answer(504, b"<html>504</html>"), "https://pbs:8007", False
        )
    upid = "UPID:pbs:00000001:00000002:00000003:65000000:create-datastore:abc:root@pam!t:"
    client.request = lambda *a, **k: {"status": "stopped", "exitstatus": "datastore path not empty"}
    with pytest.raises(TaskFailed) as failed:
        await_task(
            client, Credential("u@pbs!t", "s"), "pbs", upid, "create datastore abc", sleep=lambda _: None
        )
    client.request = lambda *a, **k: None
    with pytest.raises(Uncertain) as no_upid:
        start_task(client, Credential("u@pbs!t", "s"), "POST", "config/datastore", "create datastore abc")
    texts = [str(e.value) for e in (malformed, uncertain, failed, no_upid)]
    assert "proxmox-backup-proxy (port 8007)" in texts[0] and "PBS's API" in texts[0], texts[0]
    assert "proxmox-backup-manager task list --all" in texts[1], texts[1]
    assert f"proxmox-backup-manager task log {upid}" in texts[2], texts[2]
    assert "PBS answered no task id" in texts[3], texts[3]
    for text in texts:
        assert not any(word in text for word in ("pvesh", "pveproxy", "PVE")), text
