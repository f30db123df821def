"""A snapshot's guest family (``type``) may be left out: a vmid is unique in the cluster (pve-cluster
``PVE/Cluster.pm`` ``check_vmid_unused``: one vmlist entry per vmid, with its type), so the guest index
row names it, or, for a guest this run creates, its declaring state. A ``type`` given is a check of
that; a value that is neither lxc nor qemu is refused naming the key."""

from __future__ import annotations

import pytest

from salt_proxmox.backup import snapshot
from salt_proxmox.backup.declared import Guest
from salt_proxmox.errors import DeclarationError
from salt_proxmox.run.lowstate import Chunk
from salt_proxmox.simple.lifecycle import chunk_keys

ROW = {"vmid": 101, "node": "pve1", "type": "lxc", "name": "web"}
DECLARING = Guest("qemu", 101, "pve2", None, None, "proxmox-qemu-app")


def _problems(excinfo: pytest.ExceptionInfo[DeclarationError]) -> str:
    return " ".join(excinfo.value.problems)


def test_a_type_left_out_is_the_guest_index_rows():
    kind, note = snapshot.resolve_type(101, None, ROW, None)
    assert kind == "lxc"
    assert note is not None and "type: lxc" in note and "cluster/resources" in note and "CT 101" in note


def test_the_index_row_decides_before_this_runs_declarations():
    assert snapshot.resolve_type(101, None, ROW, DECLARING)[0] == "lxc"


def test_a_type_left_out_of_a_guest_this_run_creates_is_its_declaring_states():
    kind, note = snapshot.resolve_type(101, None, None, DECLARING)
    assert kind == "qemu"
    assert note is not None and "proxmox-qemu-app" in note and "VM 101" in note


def test_a_vmid_in_neither_is_refused_naming_type_and_the_remedy():
    with pytest.raises(DeclarationError) as excinfo:
        snapshot.resolve_type(101, None, None, None)
    text = _problems(excinfo)
    assert text.startswith("type: ")
    assert "VM/CT 101 exists in no guest index row nor in this run's declarations" in text
    assert "declare type (lxc or qemu)" in text and "create the guest" in text


def test_a_type_given_is_a_check_of_the_index_row():
    assert snapshot.resolve_type(101, "lxc", ROW, None) == ("lxc", None), "agreeing: no note"
    with pytest.raises(DeclarationError) as excinfo:
        snapshot.resolve_type(101, "qemu", ROW, None)
    assert _problems(excinfo).startswith("type: qemu, but vmid 101 is a container (cluster/resources)")


def test_a_type_given_is_a_check_of_this_runs_declaration():
    assert snapshot.resolve_type(101, "qemu", None, DECLARING) == ("qemu", None)
    with pytest.raises(DeclarationError) as excinfo:
        snapshot.resolve_type(101, "lxc", None, DECLARING)
    text = _problems(excinfo)
    assert text.startswith("type: lxc, but vmid 101 is a VM") and "proxmox-qemu-app" in text


def test_a_type_given_of_a_guest_in_neither_is_left_to_the_refusals():
    """The plan's refusals then say the guest does not exist and no state of the run declares it."""
    assert snapshot.resolve_type(101, "qemu", None, None) == ("qemu", None)


@pytest.mark.parametrize("bad", ["vm", "LXC", 1, True, ""])
def test_a_type_that_is_neither_lxc_nor_qemu_is_refused_naming_the_key(bad):
    for refuse in (
        lambda: snapshot.resolve_type(101, bad, ROW, None),
        lambda: snapshot.identify("s", "lab", "s1", 101, "pve1", bad),
        lambda: snapshot.declare("s", "lab", "s1", 101, "pve1", bad),
    ):
        with pytest.raises(DeclarationError) as excinfo:
            refuse()
        text = _problems(excinfo)
        assert text.startswith("type: ") and "lxc" in text and "qemu" in text


def test_an_identity_without_type_is_the_same_rows_identity():
    """The ownership row key is vmid and snapname: a probe without type (an absent state that retains,
    the run's declared row keys) names the same row as a declaration with it."""
    bare = snapshot.identify("s", "lab", "s1", 101, "pve1")
    typed = snapshot.identify("s", "lab", "s1", 101, "pve1", "lxc")
    assert bare.identity == typed.identity == "101/s1"
    assert bare.label == "snapshot s1 of VM/CT 101"
    chunk = Chunk.of(
        {
            "state": "proxmox_snapshot",
            "fun": "present",
            "__id__": "s",
            "name": "s1",
            "vmid": 101,
            "node": "pve1",
        }
    )
    assert chunk is not None
    assert chunk_keys(snapshot.SPEC, chunk, "lab") == frozenset({"lab/snapshot/101/s1"})


def test_a_full_declaration_needs_the_type_resolved():
    with pytest.raises(DeclarationError) as excinfo:
        snapshot.declare("s", "lab", "s1", 101, "pve1")
    assert _problems(excinfo).startswith("type: ")
