"""The PVE client and task poller against stubs: no server, no ``responses`` library.

The client runs over a real ``requests.Session`` with a fake transport mounted per member: a
``BaseAdapter`` that answers crafted ``requests.Response`` objects or raises connection errors.
Tasks are driven with a stub client that counts what it was asked. docs/design.md §4, §5; PVE facts:
pve-guest-common ``src/PVE/AbstractConfig.pm`` (``load_config``: "Configuration file '...' does
not exist"), pve-http-server ``src/PVE/APIServer/AnyEvent.pm`` (labels unescaped before
routing), pve-access-control (``PVEAPIToken=USER@REALM!TOKENID=SECRET``), pve-manager
``src/PVE/API2/Tasks.pm`` (``read_task_status``: a task's owner may read it).
"""

from __future__ import annotations

import logging

import pytest
import requests

from salt_proxmox.errors import Uncertain
from salt_proxmox.pve.client import Credential, api_path
from salt_proxmox.pve.errors import PVE_WORDS, PveConfigMissing, PveError, PveMalformed, PveUnreachable
from salt_proxmox.pve.tasks import (
    TaskFailed,
    TaskUncertain,
    await_task,
    run_task,
    warnings_note,
    warnings_of,
)
from tests.support.client_stubs import (
    CREDENTIAL,
    SECRET,
    UPID,
    Answer,
    Member,
    answers,
    client_with,
    no_secret,
)


def refused(request: requests.PreparedRequest) -> requests.Response:
    raise requests.exceptions.ConnectionError(
        "HTTPSConnectionPool(host='pve1', port=8006): Max retries exceeded with url: /api2/json "
        "(Caused by NewConnectionError('Failed to establish a new connection: "
        "[Errno 111] Connection refused'))"
    )


def reset(request: requests.PreparedRequest) -> requests.Response:
    raise requests.exceptions.ConnectionError(
        "('Connection aborted.', ConnectionResetError(104, 'Connection reset by peer'))"
    )


def read_timeout(request: requests.PreparedRequest) -> requests.Response:
    raise requests.exceptions.ReadTimeout("HTTPSConnectionPool(host='pve1', port=8006): Read timed out.")


def connect_timeout(request: requests.PreparedRequest) -> requests.Response:
    raise requests.exceptions.ConnectTimeout("HTTPSConnectionPool(host='pve1', port=8006): connect timeout")


# --------------------------------------------------------------------------------------------
# requests, members, failover
# --------------------------------------------------------------------------------------------


def test_a_success_returns_data_with_token_header_timeout_and_tls() -> None:
    pve1 = Member(answers(body={"data": {"digest": "d"}}))
    client = client_with(pve1)
    assert client.request("GET", "nodes/pve1/lxc/150/config", CREDENTIAL) == {"digest": "d"}
    (seen,) = pve1.seen
    assert seen["request"].url == "https://pve1:8006/api2/json/nodes/pve1/lxc/150/config"
    assert seen["request"].headers["Authorization"] == f"PVEAPIToken=salt@pve!provision={SECRET}"
    assert seen["timeout"] == 7.0  # every call has a timeout
    # TLS verified by default (requests may swap True for the environment's CA bundle path).
    assert client.session.verify is True
    assert seen["verify"] not in (False, None, "")
    assert client.sent == [("GET", "nodes/pve1/lxc/150/config")]


def test_a_netrc_entry_for_the_member_never_replaces_the_token(tmp_path, monkeypatch) -> None:
    """requests reads ``~/.netrc`` (or ``$NETRC``) for a request sent without ``auth`` and lets its
    Basic credentials replace an ``Authorization`` header (requests ``Session.prepare_request``,
    ``PreparedRequest.prepare_auth``): the token goes as the request's ``auth``, so it always wins."""
    netrc = tmp_path / "netrc"
    netrc.write_text("machine pve1 login root password hunter2\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    pve1 = Member(answers(body={"data": None}))
    client_with(pve1).request("GET", "version", CREDENTIAL)
    sent = pve1.seen[0]["request"].headers["Authorization"]
    assert sent == f"PVEAPIToken=salt@pve!provision={SECRET}", "a .netrc entry replaced the token"


def test_verify_path_is_passed_to_the_transport() -> None:
    pve1 = Member(answers(body={"data": None}))
    client_with(pve1, verify="/etc/ssl/pve-ca.pem").request("GET", "version", CREDENTIAL)
    assert pve1.seen[0]["verify"] == "/etc/ssl/pve-ca.pem"


def test_params_and_form_are_sent() -> None:
    pve1 = Member(answers(body={"data": None}))
    client_with(pve1).request(
        "PUT", "nodes/pve1/lxc/150/config", CREDENTIAL, params={"a": "1"}, form={"memory": "1024"}
    )
    request = pve1.seen[0]["request"]
    assert request.url.endswith("/config?a=1")
    assert request.body == "memory=1024"


@pytest.mark.parametrize("failure", [refused, connect_timeout], ids=["connection-refused", "connect-timeout"])
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_member_that_does_not_answer_fails_over_to_the_next(failure: Answer, method: str) -> None:
    # Nothing was sent to pve1, so even a write may go to pve2.
    pve1, pve2 = Member(failure), Member(answers(body={"data": "ok"}))
    client = client_with(pve1, pve2)
    assert client.request(method, "cluster/resources", CREDENTIAL) == "ok"
    assert (len(pve1.seen), len(pve2.seen)) == (1, 1)
    assert client.sent == [(method, "cluster/resources"), (method, "cluster/resources")]


def test_a_read_that_timed_out_fails_over() -> None:
    pve1, pve2 = Member(read_timeout), Member(answers(body={"data": 1}))
    assert client_with(pve1, pve2).request("GET", "version", CREDENTIAL) == 1
    assert len(pve2.seen) == 1


@pytest.mark.parametrize("status", [500, 503, 403, 401, 400, 596])
def test_an_http_answer_is_an_answer_and_is_not_retried(status: int) -> None:
    pve1, pve2 = (
        Member(answers(status, {"data": None, "message": "boom\n"})),
        Member(answers(body={"data": 1})),
    )
    with pytest.raises(PveError) as caught:
        client_with(pve1, pve2).request("GET", "nodes/pve1/lxc/150/config", CREDENTIAL)
    assert caught.value.status == status
    assert pve2.seen == []


@pytest.mark.parametrize("failure", [reset, read_timeout], ids=["reset-after-send", "read-timeout"])
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_a_write_that_may_have_been_sent_is_uncertain_and_never_resent(failure: Answer, method: str) -> None:
    pve1, pve2 = Member(failure), Member(answers(body={"data": UPID}))
    with pytest.raises(Uncertain) as caught:
        client_with(pve1, pve2).request(method, "nodes/pve1/lxc", CREDENTIAL, form={"vmid": "150"})
    assert pve2.seen == []
    assert "may or may not have acted" in str(caught.value)
    no_secret(caught.value)


def test_no_member_answering_is_unreachable_without_the_secret() -> None:
    pve1, pve2 = Member(refused), Member(connect_timeout)
    with pytest.raises(PveUnreachable) as caught:
        client_with(pve1, pve2).request("GET", "version", CREDENTIAL)
    assert "no member of target homelab answered" in str(caught.value)
    no_secret(caught.value)
    assert caught.value.__cause__ is None


# --------------------------------------------------------------------------------------------
# typed errors
# --------------------------------------------------------------------------------------------


def test_typed_error_keeps_status_message_and_field_errors() -> None:
    body = {
        "data": None,
        "message": "Parameter verification failed.\n",
        "errors": {"memory": "value must have a minimum value of 16\n"},
    }
    with pytest.raises(PveError) as caught:
        client_with(Member(answers(400, body))).request(
            "PUT", "nodes/pve1/lxc/150/config", CREDENTIAL, form={"memory": "8"}
        )
    error = caught.value
    assert (error.status, error.message) == (400, "Parameter verification failed.")
    assert error.errors == {"memory": "value must have a minimum value of 16\n"}
    assert (error.method, error.path) == ("PUT", "nodes/pve1/lxc/150/config")
    assert str(error) == (
        "PUT nodes/pve1/lxc/150/config: HTTP 400 Parameter verification failed.; memory: value must have a "
        "minimum value of 16. PVE's schema rejected the form: correct the keys it names in the declaration."
    )
    assert not isinstance(error, PveConfigMissing)
    no_secret(error)


def test_message_falls_back_to_the_status_line() -> None:
    # pve-http-server puts the message in the HTTP reason phrase; the JSON body may hold only data.
    answer = answers(403, {"data": None}, reason="Permission check failed (/vms/150, VM.Audit)")
    with pytest.raises(PveError) as caught:
        client_with(Member(answer)).request("GET", "nodes/pve1/lxc/150/config", CREDENTIAL)
    assert caught.value.message == "Permission check failed (/vms/150, VM.Audit)"


MISSING = "Configuration file 'nodes/pve1/lxc/999.conf' does not exist"


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        pytest.param(500, {"data": None, "message": MISSING}, "", id="message-in-body"),
        pytest.param(500, {"data": None, "message": MISSING + "\n"}, "", id="trailing-newline"),
        pytest.param(500, {"data": None}, MISSING, id="message-in-status-line"),
    ],
)
def test_missing_config_is_its_own_type(status: int, body: dict, reason: str) -> None:
    with pytest.raises(PveConfigMissing) as caught:
        client_with(Member(answers(status, body, reason))).request(
            "GET", "nodes/pve1/lxc/999/config", CREDENTIAL
        )
    assert caught.value.status == 500


@pytest.mark.parametrize(
    ("status", "message"),
    [
        pytest.param(404, MISSING, id="same-words-other-status"),
        pytest.param(500, MISSING + ".", id="trailing-dot"),
        pytest.param(500, "unable to read: " + MISSING, id="prefixed"),
        pytest.param(500, MISSING.replace("does not exist", "does not exist (yet)"), id="suffixed"),
        pytest.param(
            500, "Configuration file 'nodes/pve1/lxc/abc.conf' does not exist", id="non-numeric-vmid"
        ),
        pytest.param(500, "configuration file 'nodes/pve1/lxc/999.conf' does not exist", id="other-case"),
        pytest.param(500, "got timeout", id="generic-500"),
        pytest.param(500, "", id="no-message"),
    ],
)
def test_nothing_else_is_missing_config(status: int, message: str) -> None:
    with pytest.raises(PveError) as caught:
        client_with(Member(answers(status, {"data": None, "message": message}))).request(
            "GET", "x", CREDENTIAL
        )
    assert type(caught.value) is PveError


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="no-data-member"),
        pytest.param({"errors": {}}, id="only-errors"),
        pytest.param([], id="json-list"),
        pytest.param("data", id="json-string"),
        pytest.param(b"<html>proxy error</html>", id="not-json"),
        pytest.param(b"", id="empty-body"),
    ],
)
def test_a_200_without_data_is_malformed(body: object) -> None:
    with pytest.raises(PveMalformed) as caught:
        client_with(Member(answers(200, body))).request("GET", "nodes/pve1/lxc/150/config", CREDENTIAL)
    assert "malformed answer from PVE" in str(caught.value)
    no_secret(caught.value)


def test_a_200_with_null_data_is_an_answer() -> None:
    # PUT .../config answers {"data": null} once written.
    assert client_with(Member(answers(200, {"data": None}))).request("PUT", "x", CREDENTIAL) is None


# --------------------------------------------------------------------------------------------
# path labels and the credential
# --------------------------------------------------------------------------------------------


def test_api_path_percent_encodes_a_upid() -> None:
    path = api_path("nodes", "pve1", "tasks", UPID)
    assert path == (
        "nodes/pve1/tasks/UPID%3Apve1%3A0000ABCD%3A00001234%3A65F00000%3Avzcreate%3A150%3Asalt%40pve%21provision%3A"
    )
    for raw in (":", "@", "!"):
        assert raw not in path.split("/", 3)[3]


def test_api_path_encodes_slashes_inside_a_label_and_numbers() -> None:
    assert api_path("nodes", "pve1", "lxc", 150) == "nodes/pve1/lxc/150"
    assert api_path("storage", "a/b") == "storage/a%2Fb"


def test_encoded_upid_reaches_the_wire_unchanged() -> None:
    pve1 = Member(answers(body={"data": {"status": "running"}}))
    client_with(pve1).request("GET", f"{api_path('nodes', 'pve1', 'tasks', UPID)}/status", CREDENTIAL)
    url = pve1.seen[0]["request"].url
    assert "UPID%3Apve1%3A" in url and "salt%40pve%21provision" in url


def test_credential_repr_and_str_never_show_secret_or_lease() -> None:
    no_secret(repr(CREDENTIAL), str(CREDENTIAL))
    assert "salt@pve!provision" in repr(CREDENTIAL)
    assert CREDENTIAL.header() == f"PVEAPIToken=salt@pve!provision={SECRET}"


def test_no_log_line_carries_the_secret(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(PveUnreachable):
        client_with(Member(refused), Member(refused)).request("GET", "version", CREDENTIAL)
    with pytest.raises(PveError):
        client_with(Member(answers(500, {"data": None, "message": "x"}))).request(
            "GET", "version", CREDENTIAL
        )
    assert caplog.records  # the failover is logged
    for record in caplog.records:
        no_secret(record.getMessage())


# --------------------------------------------------------------------------------------------
# tasks
# --------------------------------------------------------------------------------------------


class StubClient:
    """Answers POSTs with ``start`` and status GETs with ``polls`` in turn (the last repeats)."""

    words = PVE_WORDS

    def __init__(self, start: object = UPID, polls: list[object] | None = None):
        self.start = start
        self.polls = list(polls or [{"status": "stopped", "exitstatus": "OK"}])
        self.sent: list[tuple[str, str, Credential]] = []

    def request(self, method, path, credential, params=None, form=None):
        self.sent.append((method, path, credential))
        if method != "GET":
            return self.start
        answer = self.polls.pop(0) if len(self.polls) > 1 else self.polls[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def count(self, method: str) -> int:
        return sum(1 for sent in self.sent if sent[0] == method)


STATUS_PATH = f"{api_path('nodes', 'pve1', 'tasks', UPID)}/status"
RUNNING = {"status": "running", "upid": UPID}
OK = {"status": "stopped", "exitstatus": "OK"}


def run(client: StubClient, polls: int = 5, sleeps: list | None = None) -> str:
    return run_task(
        client,
        CREDENTIAL,
        "POST",
        "nodes/pve1/lxc",
        "pve1",
        "create CT 150",
        form={"vmid": "150"},
        polls=polls,
        sleep=(sleeps.append if sleeps is not None else lambda s: None),
    )


def test_task_ok() -> None:
    client = StubClient(polls=[RUNNING, RUNNING, OK])
    sleeps: list = []
    assert run(client, sleeps=sleeps) == UPID
    assert [sent[:2] for sent in client.sent] == [("POST", "nodes/pve1/lxc")] + [("GET", STATUS_PATH)] * 3
    assert sleeps == [1.0, 1.0]


def test_every_poll_uses_the_credential_that_started_the_task() -> None:
    # Tasks.pm read_task_status: the task's owner may read it without Sys.Audit; a new mint is
    # another token identity.
    client = StubClient(polls=[RUNNING, RUNNING, OK])
    run(client)
    assert all(sent[2] is CREDENTIAL for sent in client.sent)


@pytest.mark.parametrize(
    "exit_status",
    # pve-common src/PVE/UPID.pm status_is_error: only "OK" and "WARNINGS: <digits>" are not errors.
    [
        "unable to create CT 150 - storage full",
        "WARNINGS:",
        "WARNINGS: x",
        "WARNINGS: 2 more",
        "unexpected status",
        None,
    ],
)
def test_task_not_ok_fails_with_upid_and_log_command(exit_status: str | None) -> None:
    client = StubClient(polls=[{"status": "stopped", "exitstatus": exit_status}])
    with pytest.raises(TaskFailed) as caught:
        run(client)
    text = str(caught.value)
    assert UPID in text
    assert f"`pvesh get /nodes/pve1/tasks/{UPID}/log`" in text
    assert client.count("POST") == 1
    no_secret(caught.value)


@pytest.mark.parametrize(("exit_status", "count"), [("OK", 0), ("WARNINGS: 1", 1), ("WARNINGS: 42", 42)])
def test_a_task_that_ended_with_warnings_succeeded(exit_status: str, count: int) -> None:
    # pve-common src/PVE/UPID.pm status_is_error / normalize_status_type: "WARNINGS: N" is a
    # success of type "warning" (pve-manager's task list shows it so), not an error.
    client = StubClient(polls=[RUNNING, {"status": "stopped", "exitstatus": exit_status}])
    assert await_task(client, CREDENTIAL, "pve1", UPID, "create CT 150", sleep=lambda s: None) == count
    assert warnings_of(exit_status) == count
    assert client.count("POST") == 0 and client.count("GET") == 2


def test_the_warnings_note_names_the_count_and_the_log_command() -> None:
    note = warnings_note("grow rootfs of CT 150 to 10G", "pve1", UPID, 3)
    assert "succeeded with 3 warnings" in note and f"`pvenode task log {UPID}` on pve1" in note


@pytest.mark.parametrize(
    "poll",
    [
        pytest.param(PveUnreachable("GET status: no member answered"), id="exception"),
        pytest.param(PveError("GET", STATUS_PATH, 403, "Permission check failed"), id="403"),
        pytest.param(None, id="null"),
        pytest.param({}, id="empty-object"),
        pytest.param({"exitstatus": "OK"}, id="no-status-word"),
        pytest.param("stopped", id="not-an-object"),
    ],
)
def test_an_unreadable_poll_is_uncertain_with_the_upid_and_one_post(poll: object) -> None:
    client = StubClient(polls=[RUNNING, poll])
    with pytest.raises(TaskUncertain) as caught:
        run(client)
    assert UPID in str(caught.value)
    assert "pvesh get /nodes/pve1/tasks/" in str(caught.value)
    assert client.count("POST") == 1
    assert client.count("GET") == 2  # no poll after the unreadable one
    no_secret(caught.value)


@pytest.mark.parametrize("polls", [1, 3, 60])
def test_still_running_at_the_bound_is_uncertain_after_exactly_polls_polls(polls: int) -> None:
    client = StubClient(polls=[RUNNING])
    sleeps: list = []
    with pytest.raises(TaskUncertain) as caught:
        run(client, polls=polls, sleeps=sleeps)
    assert client.count("GET") == polls
    assert len(sleeps) == polls - 1  # no sleep after the last poll
    assert client.count("POST") == 1
    assert "still running" in str(caught.value) and UPID in str(caught.value)


def test_a_transitional_status_word_keeps_polling() -> None:
    # Only "stopped" ends a task; any other word is not an unreadable answer.
    client = StubClient(polls=[{"status": "queued"}, {"status": "starting"}, RUNNING, OK])
    assert run(client, polls=10) == UPID
    assert client.count("GET") == 4


@pytest.mark.parametrize(
    "answer", [None, "", {"upid": UPID}, "OK", 42], ids=["null", "empty", "object", "word", "int"]
)
def test_no_upid_is_uncertain_and_nothing_is_polled(answer: object) -> None:
    client = StubClient(start=answer)
    with pytest.raises(TaskUncertain, match="answered no task id"):
        run(client)
    assert client.count("GET") == 0


def test_await_task_polls_the_encoded_status_path() -> None:
    client = StubClient(polls=[OK])
    await_task(client, CREDENTIAL, "pve1", UPID, "grow mp0", polls=1, sleep=lambda s: None)
    assert client.sent == [("GET", STATUS_PATH, CREDENTIAL)]
