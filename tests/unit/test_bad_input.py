"""Bad input and bad config never crash and never leak: refused before any request, naming the key,
never echoing a secret (docs/design.md §5).

PVE facts: pve-access-control ``PVEAPIToken=USER@REALM!TOKENID=SECRET`` is one header line (requests
refuses a CR or LF in a header and quotes the whole value in its error); pve-http-server
``src/PVE/APIServer/AnyEvent.pm`` refuses a request body over ``$limit_max_post`` (64 KiB) and never
redirects an API call; AnyEvent::HTTP's 596/597 are a proxied request broken while sent or answered.
"""

from __future__ import annotations

import pytest
import requests

from salt_proxmox.errors import DeclarationError, Uncertain
from salt_proxmox.firewall import alias
from salt_proxmox.lxc.props import parse_declaration
from salt_proxmox.openbao.creds import parse_credentials
from salt_proxmox.pve.client import Credential, PveClient, Target, parse_target
from salt_proxmox.pve.constraints import check_form, vmid_number
from salt_proxmox.pve.errors import PveError, PveMalformed, PveRequestFailed, PveUnreachable
from salt_proxmox.simple import acl, pool, role
from tests.support.client_stubs import (
    CREDENTIAL,
    MEMBERS,
    SECRET,
    UPID,
    Member,
    answers,
    client_with,
    no_secret,
)

# --------------------------------------------------------------------------------------------
# credentials with a control character: refused before any request, the key named, no value
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["\n", "\r\n", "\t", " ", "\x00", "é"])
@pytest.mark.parametrize("key", ["token_id", "secret"])
def test_a_credential_that_cannot_be_a_header_is_refused_before_any_request(key: str, bad: str) -> None:
    fields = {"token_id": "salt@pve!provision", "secret": SECRET}
    fields[key] += bad
    pve1 = Member(answers(body={"data": "ok"}))
    with pytest.raises(DeclarationError) as caught:
        client_with(pve1).request("GET", "version", Credential(fields["token_id"], fields["secret"]))
    assert pve1.seen == [], "nothing was sent"
    assert f"{key} holds a line break" in str(caught.value)
    no_secret(caught.value)


@pytest.mark.parametrize("key", ["token_id", "secret"])
def test_a_static_credential_with_a_trailing_newline_is_refused_naming_the_key(key: str) -> None:
    # A YAML block scalar (`secret: |`) leaves a trailing newline.
    pair = {"token_id": "salt@pve!plan", "secret": SECRET}
    pair[key] += "\n"
    target = parse_target(
        "lab", {"members": ["https://pve1:8006"], "credentials": {"source": "static", "read": pair}}
    )
    with pytest.raises(DeclarationError) as caught:
        parse_credentials(target)
    assert f"credentials:read: {key} holds a line break" in str(caught.value)
    no_secret(caught.value)


# --------------------------------------------------------------------------------------------
# every name check takes the whole string: a trailing newline is not a valid name
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "check",
    [
        pytest.param(lambda: pool.identify("s", "lab", name="prod\n"), id="pool"),
        pytest.param(lambda: role.identify("s", "lab", name="Reader\n"), id="role"),
        pytest.param(lambda: alias.identify("s", "lab", name="web\n"), id="alias"),
        pytest.param(lambda: acl.identify("s", "lab", path="/\n", role="R", user="u@pve"), id="acl-path"),
        pytest.param(lambda: acl.identify("s", "lab", path="/", role="R\n", user="u@pve"), id="acl-role"),
        pytest.param(lambda: acl.identify("s", "lab", path="/", role="R", user="u@pve\n"), id="acl-user"),
        pytest.param(lambda: acl.identify("s", "lab", path="/", role="R", token="u@pve!t\n"), id="acl-token"),
        pytest.param(lambda: acl.identify("s", "lab", path="/", role="R", group="g\n"), id="acl-group"),
        pytest.param(lambda: vmid_number("150\n"), id="vmid"),
        pytest.param(lambda: parse_declaration("s", vmid=150, node="pve1\n", target="lab"), id="node"),
        pytest.param(
            lambda: parse_declaration(
                "s", vmid=150, node="pve1", target="lab", config={"rootfs": "local\n:8"}
            ),
            id="rootfs-storage",
        ),
    ],
)
def test_a_trailing_newline_is_never_part_of_a_valid_name(check) -> None:
    with pytest.raises(DeclarationError):
        check()


def test_an_openbao_policy_name_with_a_trailing_newline_is_refused() -> None:
    from salt_proxmox.openbao_policy.policy import check_name

    with pytest.raises(DeclarationError):
        check_name("proxmox-read\n")


def test_a_token_id_with_a_trailing_newline_is_not_a_token_id() -> None:
    from salt_proxmox.openbao.creds import TOKEN_ID

    assert TOKEN_ID.match("salt@pve!plan") and not TOKEN_ID.match("salt@pve!plan\n")


# --------------------------------------------------------------------------------------------
# configuration: a sentence naming the key, never a traceback
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verify", "fragment"),
    [
        pytest.param("false", "'false' is a string, not a boolean", id="string-false"),
        pytest.param("True", "'True' is a string, not a boolean", id="string-true"),
        pytest.param(
            "/nonexistent/pve-ca.pem", "the CA bundle /nonexistent/pve-ca.pem does not exist", id="missing"
        ),
        pytest.param(0, "expected true, false or a CA bundle path", id="a-number"),
    ],
)
def test_verify_that_is_no_boolean_and_no_bundle_is_refused_naming_the_key(verify, fragment) -> None:
    with pytest.raises(DeclarationError) as caught:
        parse_target("lab", {"members": ["https://pve1:8006"], "verify": verify, "credentials": {}})
    assert f"proxmox:targets:lab:verify: {fragment}" in str(caught.value)


def test_a_ca_bundle_that_exists_is_kept(tmp_path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    target = parse_target("lab", {"members": ["https://pve1:8006"], "verify": str(bundle), "credentials": {}})
    assert target.verify == str(bundle)


@pytest.mark.parametrize("vmid", ["abc", "", "1.5", True, None, "-1"])
def test_a_vmid_that_is_not_one_is_a_sentence_naming_the_key(vmid) -> None:
    with pytest.raises(DeclarationError, match=r"^vmid: "):
        vmid_number(vmid)


def test_a_redirect_is_not_followed_and_is_named() -> None:
    pve1 = Member(answers(302, b"", reason="Found"))
    with pytest.raises(PveMalformed, match="a redirect; PVE's API never redirects"):
        client_with(pve1).request("GET", "version", CREDENTIAL)
    assert len(pve1.seen) == 1


def test_the_transport_is_told_not_to_follow_redirects() -> None:
    seen = {}

    class Session(requests.Session):
        def request(self, *args, **kwargs):
            seen.update(kwargs)
            raise requests.exceptions.TooManyRedirects("Exceeded 30 redirects.")

    client = PveClient(Target("homelab", MEMBERS[:1]), Session())
    with pytest.raises(PveRequestFailed, match="TooManyRedirects"):
        client.request("POST", "nodes/pve1/lxc", CREDENTIAL, form={"vmid": "150"})
    assert seen["allow_redirects"] is False


@pytest.mark.parametrize(
    "exc",
    [
        requests.exceptions.InvalidHeader(f"Invalid return character or leading space in header: {SECRET}"),
        requests.exceptions.InvalidURL(f"Invalid URL with {SECRET}"),
        requests.exceptions.MissingSchema(f"No scheme {SECRET}"),
        requests.exceptions.RequestException(f"anything {SECRET}"),
    ],
    ids=lambda exc: type(exc).__name__,
)
def test_every_requests_failure_is_described_by_its_kind_never_its_text(exc) -> None:
    def fail(_request):
        raise exc

    with pytest.raises(PveRequestFailed) as caught:
        client_with(Member(fail)).request("PUT", "nodes/pve1/lxc/150/config", CREDENTIAL, form={"a": "1"})
    assert type(exc).__name__ in str(caught.value)
    no_secret(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__, (
        "no traceback chains the text"
    )


# --------------------------------------------------------------------------------------------
# TLS: named, and failed over for reads and writes alike (nothing was sent)
# --------------------------------------------------------------------------------------------


def tls_failure(_request):
    raise requests.exceptions.SSLError(
        "HTTPSConnectionPool(host='pve1', port=8006): Max retries exceeded (Caused by SSLError("
        "SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed')))"
    )


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE"])
def test_a_tls_failure_fails_over_for_reads_and_writes_alike(method: str) -> None:
    pve1, pve2 = Member(tls_failure), Member(answers(body={"data": UPID}))
    assert client_with(pve1, pve2).request(method, "nodes/pve1/lxc", CREDENTIAL) == UPID
    assert (len(pve1.seen), len(pve2.seen)) == (1, 1)


def test_tls_failing_everywhere_is_named_as_tls_with_the_ca_bundle() -> None:
    with pytest.raises(PveUnreachable) as caught:
        client_with(Member(tls_failure), Member(tls_failure), verify="/etc/ssl/pve-ca.pem").request(
            "POST", "nodes/pve1/lxc", CREDENTIAL
        )
    text = str(caught.value)
    assert text.count("TLS failed") == 2 and "CA bundle /etc/ssl/pve-ca.pem (verify)" in text
    no_secret(caught.value)


# --------------------------------------------------------------------------------------------
# answers that leave a write's fate unknown
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [502, 504, 596, 597, 599])
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_a_lost_answer_to_a_write_is_uncertain_and_not_resent(status: int, method: str) -> None:
    pve1, pve2 = Member(answers(status, b"<html>gateway</html>")), Member(answers(body={"data": UPID}))
    with pytest.raises(Uncertain, match=f"HTTP {status}.*may or may not have acted"):
        client_with(pve1, pve2).request(method, "nodes/pve1/lxc", CREDENTIAL)
    assert pve2.seen == []


@pytest.mark.parametrize("status", [504, 596, 597])
def test_the_same_answer_to_a_read_is_an_error_not_uncertain(status: int) -> None:
    with pytest.raises(PveError) as caught:
        client_with(Member(answers(status, {"data": None}))).request("GET", "version", CREDENTIAL)
    assert not isinstance(caught.value, Uncertain) and caught.value.status == status


def test_an_html_200_to_a_write_is_uncertain_to_a_read_malformed() -> None:
    portal = answers(200, b"<html><body>Welcome</body></html>")
    with pytest.raises(Uncertain, match="without PVE's JSON"):
        client_with(Member(portal)).request("POST", "nodes/pve1/lxc", CREDENTIAL)
    with pytest.raises(PveMalformed):
        client_with(Member(portal)).request("GET", "version", CREDENTIAL)


@pytest.mark.parametrize(
    "exc",
    [
        requests.exceptions.ChunkedEncodingError("Connection broken: IncompleteRead(3 bytes read)"),
        requests.exceptions.ContentDecodingError("Received response with content-encoding: gzip"),
    ],
    ids=lambda exc: type(exc).__name__,
)
def test_a_broken_body_is_uncertain_after_a_write_and_malformed_after_a_read(exc) -> None:
    def broken(_request):
        raise exc

    pve1, pve2 = Member(broken), Member(answers(body={"data": UPID}))
    with pytest.raises(Uncertain, match="may or may not have acted"):
        client_with(pve1, pve2).request("PUT", "nodes/pve1/lxc/150/config", CREDENTIAL)
    with pytest.raises(PveMalformed):
        client_with(Member(broken)).request("GET", "version", CREDENTIAL)
    assert pve2.seen == []


# --------------------------------------------------------------------------------------------
# YAML 1.1 non-strings where PVE takes text; lengths PVE limits
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        pytest.param("hostname", True, "got the boolean true", id="hostname-on"),
        pytest.param("description", 1.1, "got the number 1.1", id="description-1.10"),
        pytest.param("tags", False, "got the boolean false", id="tags-off"),
        pytest.param("timezone", 1.5, "got the number 1.5", id="timezone-float"),
        pytest.param("net0", True, "got the boolean true", id="net0-yes"),
    ],
)
def test_a_yaml_non_string_where_pve_takes_text_is_refused_with_how_to_quote(key, value, fragment) -> None:
    with pytest.raises(DeclarationError) as caught:
        parse_declaration("s", vmid=150, node="pve1", target="lab", config={key: value})
    assert caught.value.problems[0].startswith(f"{key}: {fragment} where PVE takes text")
    assert "quote the text" in caught.value.problems[0]


def test_numbers_where_pve_takes_numbers_are_kept() -> None:
    decl = parse_declaration(
        "s", vmid=150, node="pve1", target="lab", config={"memory": 1024, "cpulimit": 1.5}
    )
    assert decl.config["memory"] == "1024" and decl.config["cpulimit"] == "1.5"


def test_a_pool_comment_and_an_alias_comment_that_yaml_turned_into_no_text_are_refused() -> None:
    with pytest.raises(DeclarationError, match=r"comment: got the number 1\.1 .*quote the text"):
        pool.declare("s", "lab", name="prod", comment=1.1)
    with pytest.raises(DeclarationError, match=r"comment: got the boolean true .*quote the text"):
        alias.declare("s", "lab", name="web", cidr="10.0.0.1", comment=True)


def test_a_value_longer_than_a_pve_request_body_is_refused_with_the_value_clipped() -> None:
    with pytest.raises(DeclarationError) as caught:
        check_form(pool.CREATE, {"poolid": "prod", "comment": "x" * 70000}, presence=True)
    (problem,) = caught.value.problems
    assert problem.startswith("POST /pools: comment: 'xxx") and "(70000 characters)" in problem
    assert "$limit_max_post" in problem and len(problem) < 300


def test_a_value_over_its_schema_length_shows_the_value_clipped() -> None:
    with pytest.raises(DeclarationError) as caught:
        parse_declaration("s", vmid=150, node="pve1", target="lab", config={"description": "d" * 9000})
    (problem,) = caught.value.problems
    assert "may only be 8192 characters long, got 'ddd" in problem and "(9000 characters)" in problem


@pytest.mark.parametrize(
    ("block", "fragment"),
    [
        pytest.param(
            {"verify": "false"}, "openbao:verify: 'false' is a string, not a boolean", id="verify-string"
        ),
        pytest.param({"verify": "/nonexistent/ca.pem"}, "openbao:verify: the CA bundle", id="verify-missing"),
        pytest.param(
            {"auth": {"method": "token", "token": f"{SECRET}\n"}},
            "openbao:auth:token holds a line break",
            id="token-newline",
        ),
    ],
)
def test_the_openbao_block_is_checked_the_same_way(block, fragment) -> None:
    from salt_proxmox.openbao.client import parse_config

    raw = {"url": "https://bao:8200", "auth": {"method": "token", "token": "t"}, **block}
    with pytest.raises(DeclarationError) as caught:
        parse_config(raw)
    assert fragment in str(caught.value)
    no_secret(caught.value)
