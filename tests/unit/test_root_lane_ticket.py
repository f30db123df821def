"""The ticket lane's pure half: its configuration, the login and the requests it sends, and what it
refuses. No server: members answer as a transport adapter (tests.support.client_stubs), OpenBao as a
stub of ``hvac.Client.read``.

Sources: pve-access-control ``src/PVE/API2/AccessControl.pm`` ``create_ticket`` (``username``,
``password``; every failure ``401 authentication failure``; ``NeedTFA`` for a user with a second
factor, ``create_ticket_do``), pve-http-server ``src/PVE/APIServer/AnyEvent.pm``
``authenticate_and_handle_request`` (cookie ``PVEAuthCookie``, header ``CSRFPreventionToken``),
pve-manager ``PVE/HTTPServer.pm`` ``auth_handler`` (the CSRF token on every method but GET).
"""

from __future__ import annotations

import hvac.exceptions
import pytest
import requests

from salt_proxmox.errors import DeclarationError, Uncertain
from salt_proxmox.guest.change import Change
from salt_proxmox.guest.lane import lane_check, plan_line, route
from salt_proxmox.openbao.creds import CredentialError
from salt_proxmox.pve.client import Target
from salt_proxmox.pve.errors import PveError
from salt_proxmox.pve.lane import LaneConfig, parse_root_lane
from salt_proxmox.pve.ticket import RENEW_AFTER, Login, TicketLane, TicketRefused
from salt_proxmox.snippet.declare import Snippet
from salt_proxmox.snippet.place import place
from tests.support.client_stubs import MEMBERS, Member, answers

PASSWORD = "r00t-pa55word-never-shown"
TICKET = "PVE:root@pam:65F00000::c2lnbmF0dXJlLW5ldmVyLXNob3du"
CSRF = "65F00000:csrf-never-shown"
PATH = "secret/data/pve/root"
LOGGED_IN = {"username": "root@pam", "ticket": TICKET, "CSRFPreventionToken": CSRF, "cap": {}}
CONFIG = "nodes/pve1/lxc/120/config"


def _kv2(password: str = PASSWORD) -> dict:
    """A KV version 2 read's answer (OpenBao builtin/logical/kv pathData)."""
    return {"data": {"data": {"password": password}, "metadata": {"version": 1}}, "lease_duration": 0}


class _Bao:
    """``hvac.Client.read``: ``answer`` (root@pam's password on a KV version 2 mount unless given; None
    as hvac answers for a path with no secret), or ``error`` raised; each path read kept in ``reads``."""

    def __init__(self, answer: object = "kv2", error: Exception | None = None) -> None:
        self.answer = _kv2() if answer == "kv2" else answer
        self.error = error
        self.reads: list[str] = []

    def read(self, path: str) -> object:
        self.reads.append(path)
        if self.error is not None:
            raise self.error
        return self.answer


class _Broker:
    def __init__(self, bao: _Bao) -> None:
        self.bao = bao

    def openbao_client(self) -> _Bao:
        return self.bao


def _lane(member: Member, bao: _Bao | None = None, memo: dict | None = None) -> TicketLane:
    session = requests.Session()
    session.mount(MEMBERS[0], member)
    config = LaneConfig("ticket", password_path=PATH, password_key="password")
    target = Target("lab", MEMBERS[:1], timeout=7.0)
    return TicketLane(config, target, session, _Broker(bao or _Bao()), {} if memo is None else memo)  # type: ignore[arg-type]


def _hidden(*texts: object) -> None:
    for text in texts:
        for secret in (PASSWORD, TICKET, CSRF):
            assert secret not in str(text) and secret not in repr(text)


# ------------------------------------------------------------------------------------ configuration


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"via": "ticket", "password": {"path": PATH}}, LaneConfig("ticket", password_path=PATH)),
        (
            {"via": "ticket", "password": {"path": "/pve/root/", "key": "pw"}},
            LaneConfig("ticket", password_path="pve/root", password_key="pw"),
        ),
    ],
    ids=["default-key", "kv1-key"],
)
def test_a_ticket_lane_names_where_root_s_password_is_kept(raw, expected) -> None:
    assert parse_root_lane("lab", raw, "openbao") == expected


@pytest.mark.parametrize(
    ("raw", "source", "needle"),
    [
        (
            {"via": "ticket", "password": {"path": PATH}},
            "static",
            "root_lane:via: the ticket lane reads root@pam's password from OpenBao through the target's "
            "credentials, and its credentials:source is 'static'",
        ),
        ({"via": "ticket"}, "openbao", "root_lane:password: expected {path: <OpenBao path>, key: <key>}"),
        (
            {"via": "ticket", "password": PASSWORD},
            "openbao",
            "root_lane:password: expected {path: <OpenBao path>, key: <key>}",
        ),
        ({"via": "ticket", "password": {"path": "/"}}, "openbao", "root_lane:password:path: expected the"),
        (
            {"via": "ticket", "password": {"path": PATH, "key": 3}},
            "openbao",
            "root_lane:password:key: expected",
        ),
        (
            {"via": "ticket", "password": {"path": PATH, "value": "x"}},
            "openbao",
            "root_lane:password: unknown key(s) value",
        ),
        (
            {"via": "ticket", "password": {"path": PATH}, "pvesh": "/usr/bin/pvesh"},
            "openbao",
            "root_lane: unknown key(s) pvesh (via: ticket takes password)",
        ),
        (
            {"via": "pvesh", "password": {"path": PATH}},
            "openbao",
            "root_lane: unknown key(s) password (via: pvesh takes lock_dir, pve_dir, pvesh, timeout)",
        ),
    ],
    ids=[
        "static-source",
        "no-password",
        "password-inline",
        "empty-path",
        "bad-key",
        "password-key",
        "pvesh-key",
        "pvesh-password",
    ],
)
def test_a_bad_ticket_lane_is_refused_naming_the_key(raw, source, needle) -> None:
    with pytest.raises(DeclarationError) as caught:
        parse_root_lane("lab", raw, source)
    assert f"proxmox:targets:lab:{needle}" in str(caught.value)
    _hidden(caught.value)


# ---------------------------------------------------------------------------------------- the login


def test_the_login_is_root_at_pam_s_password_exchanged_once_per_run_for_a_ticket() -> None:
    member = Member(answers(200, {"data": LOGGED_IN}), answers(200, {"data": None}))
    memo: dict = {}
    bao = _Bao()
    lane = _lane(member, bao, memo)
    assert lane.label == "ticket for root@pam"
    assert lane.request("PUT", CONFIG, form={"mp1": "/srv/a,mp=/a", "digest": "ab"}) is None
    assert lane.request("GET", CONFIG) is None
    login, put, get = (seen["request"] for seen in member.seen)
    # create_ticket: POST /access/ticket, username and password in the form, no credential at all.
    assert (login.method, login.url) == ("POST", f"{MEMBERS[0]}/api2/json/access/ticket")
    assert login.body == requests.models.RequestEncodingMixin._encode_params(
        {"username": "root@pam", "password": PASSWORD}
    )
    assert "Cookie" not in login.headers and "Authorization" not in login.headers
    # The ticket as cookie PVEAuthCookie; the CSRF token on the write only (auth_handler).
    assert put.headers["Cookie"] == f"PVEAuthCookie={TICKET}" and put.headers["CSRFPreventionToken"] == CSRF
    assert get.headers["Cookie"] == f"PVEAuthCookie={TICKET}" and "CSRFPreventionToken" not in get.headers
    assert "Authorization" not in put.headers and "Authorization" not in get.headers
    assert bao.reads == [PATH], "the password is read once per run"
    assert lane.sent == [("POST", "access/ticket"), ("PUT", CONFIG), ("GET", CONFIG)]
    # Kept in the run's memo only, and never in the session's cookie jar, which the token client shares.
    assert [type(value) for value in memo.values()] == [Login]
    assert not lane.client.session.cookies
    _hidden(memo, lane.client.session.cookies)


def test_a_later_lane_of_the_same_run_reuses_the_ticket() -> None:
    memo: dict = {}
    _lane(Member(answers(200, {"data": LOGGED_IN}), answers(200, {"data": None})), memo=memo).request(
        "GET", CONFIG
    )
    again = Member(answers(200, {"data": None}))
    bao = _Bao()
    _lane(again, bao, memo).request("GET", CONFIG)
    assert [seen["request"].method for seen in again.seen] == ["GET"] and bao.reads == []


def test_a_ticket_near_pve_s_two_hour_lifetime_is_renewed_before_the_next_call() -> None:
    """pve-access-control AccessControl.pm ``$ticket_lifetime`` is two hours: a run that lasts longer
    logs in again after ``RENEW_AFTER`` rather than meet a 401 in the middle of an apply."""
    now = [1000.0]
    member = Member(
        answers(200, {"data": LOGGED_IN}),
        answers(200, {"data": None}),
        answers(200, {"data": LOGGED_IN}),
        answers(200, {"data": None}),
    )
    bao = _Bao()
    lane = _lane(member, bao)
    lane.clock = lambda: now[0]
    lane.request("GET", CONFIG)
    now[0] += RENEW_AFTER - 1
    assert lane.login().issued == 1000.0, "a ticket younger than RENEW_AFTER is kept"
    now[0] += 2
    lane.request("GET", CONFIG)
    assert lane.sent == [
        ("POST", "access/ticket"),
        ("GET", CONFIG),
        ("POST", "access/ticket"),
        ("GET", CONFIG),
    ]
    assert bao.reads == [PATH, PATH]


def test_a_netrc_entry_never_reaches_the_login(tmp_path, monkeypatch) -> None:
    """requests puts a ``~/.netrc`` entry's Basic credentials on a request that has no ``auth``."""
    netrc = tmp_path / "netrc"
    netrc.write_text("machine pve1 login someone password elsewhere\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    member = Member(answers(200, {"data": LOGGED_IN}))
    _lane(member).login()
    assert "Authorization" not in member.seen[0]["request"].headers


def test_a_kv_version_1_password_is_read_as_it_is() -> None:
    member = Member(answers(200, {"data": LOGGED_IN}))
    _lane(member, _Bao({"data": {"password": PASSWORD}, "lease_duration": 0})).login()
    assert f"password={PASSWORD}" in str(member.seen[0]["request"].body)


@pytest.mark.parametrize(
    ("bao", "needle"),
    [
        (_Bao(error=hvac.exceptions.Forbidden()), "permission denied (HTTP 403)"),
        (_Bao(None), "answered nothing"),
        (_Bao({"data": {"pw": PASSWORD}}), "the key is missing"),
    ],
    ids=["forbidden", "nothing", "no-such-key"],
)
def test_a_password_that_cannot_be_read_names_the_path_and_sends_nothing(bao, needle) -> None:
    member = Member(answers(200, {"data": LOGGED_IN}))
    with pytest.raises(CredentialError) as caught:
        _lane(member, bao).login()
    assert f"OpenBao {PATH} (key password)" in str(caught.value) and needle in str(caught.value)
    assert member.seen == []
    _hidden(caught.value)


def test_a_refused_password_names_the_path_never_the_value() -> None:
    """PVE answers every login failure with 401 authentication failure (create_ticket)."""
    member = Member(answers(401, {"data": None, "message": "authentication failure\n"}))
    memo: dict = {}
    with pytest.raises(TicketRefused) as caught:
        _lane(member, memo=memo).login()
    assert f"password from OpenBao {PATH} (key password)" in str(caught.value)
    assert "401 authentication failure" in str(caught.value)
    assert memo == {}, "no ticket is kept"
    _hidden(caught.value)


def test_a_root_with_a_second_factor_is_refused_with_the_remedy() -> None:
    """create_ticket_do: a user with TFA gets NeedTFA and a ticket good for POST /access/tfa only."""
    tfa = {"username": "root@pam", "ticket": "PVE:!tfa!abc", "CSRFPreventionToken": CSRF, "NeedTFA": 1}
    with pytest.raises(TicketRefused) as caught:
        _lane(Member(answers(200, {"data": tfa}))).login()
    text = str(caught.value)
    assert "has a second factor" in text and "NeedTFA" in text and "POST /access/tfa" in text
    assert "Use root_lane: pvesh" in text
    _hidden(caught.value)


@pytest.mark.parametrize(
    "answer",
    [{**LOGGED_IN, "username": "admin@pve"}, {"username": "root@pam", "ticket": TICKET}],
    ids=["another-user", "no-csrf"],
)
def test_a_login_that_is_not_root_at_pam_with_a_ticket_is_refused(answer) -> None:
    with pytest.raises(TicketRefused) as caught:
        _lane(Member(answers(200, {"data": answer}))).login()
    assert "root@pam" in str(caught.value)
    _hidden(caught.value)


def test_the_lane_s_answers_map_onto_the_token_client_s_errors() -> None:
    refused = {"data": None, "message": "Permission check failed (mount point type bind is only allowed)\n"}
    lane = _lane(Member(answers(200, {"data": LOGGED_IN}), answers(403, refused), answers(502, reason="Bad")))
    with pytest.raises(PveError) as caught:
        lane.request("PUT", CONFIG, form={"mp1": "/srv/a,mp=/a"})
    assert caught.value.status == 403
    # A gateway that lost the answer to a write: PVE may have acted (pve.client UNCERTAIN_STATUSES).
    with pytest.raises(Uncertain):
        lane.request("PUT", CONFIG, form={"mp1": "/srv/a,mp=/a"})
    _hidden(caught.value)


# -------------------------------------------------------------------------- preconditions and routes


class _Ctx:
    """What ``lane_check``, ``route`` and ``place`` read of a context with the ticket lane."""

    def __init__(self, lane: TicketLane | None) -> None:
        self.lane = lane
        self.memo: dict = {} if lane is None else lane.memo

    class target:
        name = "lab"


def _root_change(key: str = "mp1") -> Change:
    change = Change(drift=[key])
    change.root_write(key, "/srv/a,mp=/a", f"{key}: only root@pam may write it ... pct set ...")
    return change


def test_the_ticket_lane_s_precondition_is_a_root_ticket_checked_once_per_run() -> None:
    member = Member(answers(200, {"data": LOGGED_IN}))
    ctx = _Ctx(_lane(member))
    assert lane_check(ctx) == ("ticket for root@pam", []) == lane_check(ctx)  # type: ignore[arg-type]
    assert len(member.seen) == 1
    via, refusals = route(ctx, _root_change(), "pve1", {"lxc"})  # type: ignore[arg-type]
    assert (via, refusals) == ("ticket for root@pam", [])
    assert plan_line("CT 120 on pve1", _root_change(), via).endswith("via root lane (ticket for root@pam)")


def test_a_failed_login_refuses_the_root_keys_at_plan() -> None:
    ctx = _Ctx(_lane(Member(answers(401, {"data": None, "message": "authentication failure"}))))
    via, refusals = route(ctx, _root_change())  # type: ignore[arg-type]
    assert via is None
    assert refusals[0].startswith("proxmox:targets:lab:root_lane: no ticket for root@pam")
    assert refusals[0].endswith("Nothing goes through the lane.")
    _hidden(refusals)


def test_raw_lxc_lines_need_the_pvesh_lane() -> None:
    """No API call writes a container's raw lxc.* lines (pve-container LXC/Config.pm): they are written
    into /etc/pve/nodes/<node>/lxc/<vmid>.conf on the node, which the ticket lane cannot."""
    ctx = _Ctx(_lane(Member(answers(200, {"data": LOGGED_IN}))))
    via, refusals = route(ctx, _root_change("lxc"), "pve1", {"lxc"})  # type: ignore[arg-type]
    assert via is None
    assert refusals == [
        "lxc: needs the pvesh lane (files under /etc/pve are written on the node); the ticket lane (ticket "
        "for root@pam) only calls the API, which has no call that writes them. Configure "
        "proxmox:targets:lab:root_lane: pvesh and run the states on a node of the cluster (a minion there, "
        "or salt-ssh to it)."
    ]


def test_snippets_need_the_pvesh_lane() -> None:
    """pve-storage API2/Storage/Status.pm upload takes no snippets: the file is written on the node."""
    ctx = _Ctx(_lane(Member(answers(200, {"data": LOGGED_IN}))))
    found, refusals = place(ctx, Snippet("s", "lab", "local", "user.yaml"), "local:snippets/user.yaml")  # type: ignore[arg-type]
    assert found is None
    assert refusals[-1].startswith(
        "local:snippets/user.yaml: needs the pvesh lane (files in the storage's snippets directory are "
        "written on the node)"
    )


def test_without_a_lane_the_refusal_offers_the_ticket_lane_unless_only_files_are_written() -> None:
    _, refusals = route(_Ctx(None), _root_change(), "pve1", {"lxc"})  # type: ignore[arg-type]
    assert "root_lane: pvesh" in refusals[-1] and "root_lane: {via: ticket" in refusals[-1]
    _, refusals = route(_Ctx(None), _root_change("lxc"), "pve1", {"lxc"})  # type: ignore[arg-type]
    assert "root_lane: pvesh" in refusals[-1] and "via: ticket" not in refusals[-1]
