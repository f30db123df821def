"""The storage option tables (pve-storage ``src/PVE/Storage/<X>Plugin.pm`` ``options()``/``plugindata()``)
and the pure half of the storage judge."""

from __future__ import annotations

import pytest

from salt_proxmox.errors import DeclarationError
from salt_proxmox.storage.objects import create, declare, target_problem, update
from salt_proxmox.storage.types import FIELDS, TYPES


def test_every_type_pve_ships_has_its_table():
    shipped = "dir nfs cifs lvm lvmthin zfspool rbd cephfs iscsi iscsidirect btrfs pbs esxi"
    assert set(TYPES) == set(shipped.split())


@pytest.mark.parametrize(
    ("kind", "key", "required", "fixed"),
    [
        ("dir", "path", True, True),  # DirPlugin.pm: path => { fixed => 1 }
        ("nfs", "server", True, True),
        ("nfs", "path", False, True),  # NFSPlugin.pm check_config fills /mnt/pve/<id>
        ("lvm", "base", False, True),  # { fixed => 1, optional => 1 }
        ("esxi", "server", True, False),  # ESXiPlugin.pm: server => {}
        ("pbs", "datastore", True, True),
        ("rbd", "pool", False, False),
    ],
)
def test_required_and_fixed_are_the_plugins(kind, key, required, fixed):
    option = TYPES[kind].options[key]
    assert (option.required, option.fixed) == (required, fixed)


def test_sensitive_options_are_the_plugins():
    assert TYPES["pbs"].sensitive == {"password", "encryption-key", "master-pubkey"}
    assert TYPES["cifs"].sensitive == {"password"} and TYPES["rbd"].sensitive == {"keyring"}
    assert TYPES["nfs"].sensitive == frozenset()


def test_pve8_tables_differ_where_stable_8_does():
    assert "maxfiles" in TYPES["nfs"].options_on(8) and "snapshot-as-volume-chain" not in TYPES[
        "nfs"
    ].options_on(8)
    assert "maxfiles" not in TYPES["nfs"].options_on(9)
    assert "saferemove-stepsize" not in TYPES["lvm"].options_on(8)


def test_pve_spellings_are_one_value():
    assert FIELDS["content"].canonical("iso,backup") == FIELDS["content"].canonical(["backup", "iso"])
    assert FIELDS["nodes"].canonical("pve2,pve1") == "pve1,pve2"
    assert FIELDS["prune-backups"].canonical("keep-last=3, keep-all=no") == "keep-all=0,keep-last=3"
    assert FIELDS["disable"].canonical("true") == FIELDS["disable"].canonical(1) == 1


@pytest.mark.parametrize(
    ("declared", "words"),
    [
        ({"type": "zfspool", "pool": "p", "content": "images,iso"}, "does not take iso"),
        ({"type": "nfs", "server": "a", "export": "/e", "shared": 1}, "always shared"),
        ({"type": "zfspool", "pool": "p", "shared": 1}, "always local"),
        ({"type": "dir", "path": "/d", "vgname": "pve"}, "not an option of a dir storage"),
        ({"type": "dir", "path": "/d", "content": "none,iso"}, "unable to combine 'none'"),
        ({"type": "tape"}, "not a storage type"),
        ({"type": "cifs", "server": "a", "share": "s", "secret_serial": 1}, "no secret"),
    ],
)
def test_what_pve_drops_or_refuses_is_refused_by_name(declared, words):
    with pytest.raises(DeclarationError, match=words):
        declare("s", "t", name="store", **declared)


def test_secrets_are_sent_but_never_stored_or_compared():
    decl = declare("s", "t", name="nas", type="cifs", server="a", share="s", password="pw", secret_serial=1)
    assert create(decl).form["password"] == "pw"
    assert "pw" not in repr(decl) and "password" not in decl.stored()
    live = {"type": "cifs", "server": "a", "share": "s", "secret_serial": 1}
    assert update(decl, live) is None, "the same serial sends nothing"
    assert update(decl, {**live, "secret_serial": 0}).form == {"password": "pw"}


def test_a_cleared_option_is_deleted():
    decl = declare("s", "t", name="st", type="dir", path="/d", **{"prune-backups": ""})
    call = update(decl, {"type": "dir", "path": "/d", "prune-backups": "keep-last=3"})
    assert call.form == {"delete": "prune-backups"}


def test_an_iscsi_target_is_declared_iscsi_target_and_sent_as_pves_target():
    """ISCSIPlugin.pm/ISCSIDirectPlugin.pm options(): ``target`` is the IQN, fixed; a state's own
    ``target`` argument names the cluster, so the declaration spells it ``iscsi_target``."""
    decl = declare("s", "lab", name="san", type="iscsi", portal="192.0.2.40", iscsi_target="iqn.2003-01.x:t")
    assert decl.values["iscsi_target"] == "iqn.2003-01.x:t"
    form = create(decl).form
    assert form["target"] == "iqn.2003-01.x:t" and "iscsi_target" not in form
    assert TYPES["iscsidirect"].options["iscsi_target"].fixed


@pytest.mark.parametrize("kind", ["iscsi", "iscsidirect"])
def test_a_state_target_spelt_as_an_iscsi_name_is_refused_by_name(kind):
    from tests.support.salt_modules import load

    module = load("_modules", "proxmox", {}, False)
    ret = module.storage_present(
        "san", type=kind, target="iqn.2003-01.org.example:disks", portal="192.0.2.40"
    )
    assert ret["result"] is False
    assert "target:" in ret["comment"] and "iscsi_target" in ret["comment"]
    assert target_problem("nfs", "iqn.2003-01.x:t") is None
    assert target_problem(kind, "lab") is None
