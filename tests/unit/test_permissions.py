"""The one reader of ``GET /access/permissions`` (salt_proxmox.pve.permissions) and the refusals that
read through it: pve-access-control ``src/PVE/API2/AccessControl.pm`` ``permissions`` answers
``{path: {privilege: propagate}}``, with ``userid`` another user's or token's (Sys.Audit on
``/access`` needed); pve-container ``src/PVE/API2/LXC.pm`` ``create_vm`` wants Sys.Modify on ``/``
for a privileged container on PVE 9."""

from __future__ import annotations

from dataclasses import replace

import pytest

from salt_proxmox.errors import Refused
from salt_proxmox.lxc.refusals import check_own_sys_modify, privileged_create_check
from salt_proxmox.pve.client import Credential
from salt_proxmox.pve.errors import PveError, PveMalformed
from salt_proxmox.pve.permissions import held_privileges
from tests.support.stubs import pve_context

CRED = Credential("r@pve!plan", "read-secret", role="read")
TOKEN = "salt-provision@pve!apply"


def _answering(answer):
    def handler(method, path, params, form):
        assert (method, path) == ("GET", "access/permissions")
        if isinstance(answer, Exception):
            raise answer
        return answer(params) if callable(answer) else answer

    return handler


@pytest.mark.parametrize(
    ("answer", "path", "held"),
    [
        # The value is the propagate flag: listed on the path asked about is held, 0 or 1
        # (pve-access-control RPCEnvironment.pm compile_acl_path; check() tests defined()).
        ({"/": {"Sys.Audit": 1, "Sys.Modify": 0}}, "/", {"Sys.Audit", "Sys.Modify"}),
        (
            {"/": {"Sys.Audit": 1, "Sys.Modify": 0}},
            "/access/groups",
            {"Sys.Audit"},
        ),  # 0 does not reach a child
        ({"/access": {"Sys.Audit": 1}}, "/access/groups", {"Sys.Audit"}),  # a parent path counts
        ({"/access/groups": {"Sys.Audit": "1"}, "/vms": {"VM.Audit": 1}}, "/access/groups", {"Sys.Audit"}),
        ({}, "/", set()),
    ],
)
def test_held_privileges(answer, path, held):
    ctx = pve_context(_answering(answer))
    assert held_privileges(ctx, CRED, path) == held
    assert ctx.client.sent == [("GET", "access/permissions", {"path": path}, {})]


def test_held_privileges_of_another_token_and_a_malformed_answer():
    ctx = pve_context(
        _answering(lambda params: {"/": {"Sys.Modify": 1}} if params.get("userid") == TOKEN else {})
    )
    assert held_privileges(ctx, CRED, "/", userid=TOKEN) == {"Sys.Modify"}
    assert ctx.client.sent[-1][2] == {"userid": TOKEN, "path": "/"}
    with pytest.raises(PveMalformed, match=r"expected \{path: \{privilege: 0\|1\}\}"):
        held_privileges(pve_context(_answering({"/": ["Sys.Modify"]})), CRED, "/")


def _static(ctx):
    credentials = {"source": "static", "provision": {"token_id": TOKEN, "secret": "s"}}
    return replace(ctx, target=replace(ctx.target, credentials=credentials))


@pytest.mark.parametrize(
    ("answer", "refused", "noted"),
    [
        ({"/": {"Sys.Modify": 1, "VM.Allocate": 1}}, False, False),
        ({"/": {"VM.Allocate": 1}}, True, False),
        # Sys.Modify on / that does not propagate is still held on / (create_vm checks '/').
        ({"/": {"Sys.Modify": 0, "VM.Allocate": 1}}, False, False),
        (
            PveError("GET", "access/permissions", 403, "Permission check failed (/access, Sys.Audit)"),
            False,
            True,
        ),
    ],
)
def test_a_privileged_create_reads_the_provision_tokens_privileges_through_the_one_reader(
    answer, refused, noted
):
    ctx = _static(pve_context(_answering(answer)))
    refusals, notes = privileged_create_check(ctx)
    assert bool(refusals) is refused and bool(notes) is noted
    assert ctx.client.sent == [("GET", "access/permissions", {"userid": TOKEN, "path": "/"}, {})]
    if refused:
        assert "Sys.Modify on /" in refusals[0] and TOKEN in refusals[0]


def test_the_apply_checks_the_minted_credentials_own_sys_modify():
    minted = Credential(TOKEN, "provision-secret", role="provision")
    check_own_sys_modify(pve_context(_answering({"/": {"Sys.Modify": 1}})), minted)
    check_own_sys_modify(pve_context(_answering({"/": {"Sys.Modify": 0}})), minted)  # held, not propagated
    ctx = pve_context(_answering({"/": {"VM.Allocate": 1}}))
    with pytest.raises(Refused, match="the provision credential does not hold it"):
        check_own_sys_modify(ctx, minted)
    assert ctx.client.sent == [("GET", "access/permissions", {"path": "/"}, {})]
