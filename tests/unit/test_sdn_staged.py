"""The SDN commit and what others staged (``salt_proxmox.sdn.apply.foreign_changes``): ``PUT
/cluster/sdn`` (pve-network ``API2/Network/SDN.pm`` ``reload`` → ``Network/SDN.pm``
``commit_config``) makes the whole pending configuration live, whoever wrote it, so a pending new
or changed zone, vnet or subnet no state of this run declares, or a pending key its declaration does
not hold, refuses the commit. Rows as ``pending_config`` answers them (``state``, ``pending``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from salt_proxmox.errors import Refused
from salt_proxmox.pve.errors import classify
from salt_proxmox.pve.facts import Release
from salt_proxmox.sdn import apply as sdn_apply
from salt_proxmox.sdn import lock
from salt_proxmox.simple.spec import declared, note_declared

ZONE_NEW = ("zone", "lab", {"zone": "lab", "type": "vlan", "state": "new", "pending": {"bridge": "vmbr0"}})
VNET_CHANGED = (
    "vnet",
    "labnet",
    {"vnet": "labnet", "state": "changed", "pending": {"tag": 30, "alias": "x"}},
)
SUBNET_NEW = ("subnet", "labnet/10.2.0.0/24", {"subnet": "lab-10.2.0.0-24", "state": "new", "pending": {}})


def _ctx(major: str = "9.0") -> SimpleNamespace:
    memo = {"salt_proxmox.facts/lab/version": Release(major)}
    return SimpleNamespace(memo=memo, target=SimpleNamespace(name="lab"))


def test_a_declaration_of_the_run_is_recorded_with_its_keys():
    ctx = _ctx()
    note_declared(ctx, "sdn_zone", "lab", {"type": "vlan", "bridge": "vmbr0"})
    assert declared(ctx, "sdn_zone") == {"lab": frozenset({"type", "bridge"})}
    assert declared(ctx, "sdn_vnet") == {}


def test_pending_objects_no_state_of_the_run_declares_are_refused_naming_each():
    ctx = _ctx()
    (refusal,) = sdn_apply.foreign_changes(ctx, [ZONE_NEW, VNET_CHANGED, SUBNET_NEW])
    assert "no state of this run declares" in refusal
    assert "zone lab: new (bridge=vmbr0)" in refusal
    assert "vnet labnet: changed (alias=x, tag=30)" in refusal
    assert "subnet labnet/10.2.0.0/24: new" in refusal
    assert "adopt: true" in refusal and "`pvesh create /cluster/sdn/rollback`" in refusal


def test_declared_objects_pass_and_a_staged_key_their_declaration_lacks_is_refused():
    ctx = _ctx()
    note_declared(ctx, "sdn_zone", "lab", {"type", "bridge"})
    note_declared(ctx, "sdn_vnet", "labnet", {"zone", "tag"})
    note_declared(ctx, "sdn_subnet", "labnet/10.2.0.0/24", {"gateway"})
    (refusal,) = sdn_apply.foreign_changes(ctx, [ZONE_NEW, VNET_CHANGED, SUBNET_NEW])
    assert "vnet labnet: alias=x (staged, and not in its declaration)" in refusal
    assert "zone lab" not in refusal and "subnet" not in refusal and "tag=30" not in refusal
    note_declared(ctx, "sdn_vnet", "labnet", {"zone", "tag", "alias"})
    assert sdn_apply.foreign_changes(ctx, [ZONE_NEW, VNET_CHANGED, SUBNET_NEW]) == []


def test_deletions_and_what_a_removal_of_the_run_deletes_are_not_judged_here():
    ctx = _ctx()
    ctx.memo["salt_proxmox.removed/lab/sdn"] = {"zone lab"}
    gone = ("vnet", "old", {"vnet": "old", "state": "deleted", "pending": {}})
    assert sdn_apply.foreign_changes(ctx, [ZONE_NEW, gone]) == [], "foreign_deletions judges a deletion"


def test_pve_8_has_no_rollback_and_the_remedy_says_how_to_revert_by_hand():
    (refusal,) = sdn_apply.foreign_changes(_ctx("8.4"), [ZONE_NEW])
    assert "PVE 8 has no SDN rollback" in refusal and "rollback`" not in refusal
    assert "back to its running values" in refusal


class _Rows:
    """The ownership rows ``lock.take`` writes: ``creating`` before the POST, forgotten on a refusal."""

    def __init__(self) -> None:
        self.rows: dict = {}

    def mark_creating(self, key, state_id, declared) -> None:
        self.rows[key] = "creating"

    def forget(self, key) -> None:
        self.rows.pop(key, None)


def test_a_lock_another_client_holds_refuses_the_commit_naming_it_and_keeps_no_row():
    """pve-network ``Network/SDN.pm`` ``lock_sdn_config``: ``/etc/pve/sdn/.lock`` holds a token and
    ``lock`` gives none, so PVE dies "invalid lock token provided!" under ``lock_sdn_domain``'s
    errmsg; no read shows the lock, so this is where the product meets it."""
    said = (
        "could not acquire lock for SDN config: invalid lock token provided! at "
        "/usr/share/perl5/PVE/Network/SDN.pm line 291."
    )

    class Client:
        def request(self, method, path, credential, **kw):
            raise classify(method, path, 500, said, None)

    ctx = SimpleNamespace(client=Client(), ownership=_Rows(), target=SimpleNamespace(name="lab"))
    with pytest.raises(Refused) as refused:
        lock.take(ctx, "credential", "sdn")
    (reason,) = refused.value.reasons
    assert reason.startswith("another client holds PVE's global SDN lock (POST /cluster/sdn/lock: could not")
    assert "No read shows the lock" in reason and "`pvesh delete /cluster/sdn/lock --force 1`" in reason
    assert ctx.ownership.rows == {}, "nothing of ours is held"
