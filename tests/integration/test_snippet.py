"""Snippets against the fake PVE through the fake root lane: PVE has no API call that writes one
(pve-storage ``API2/Storage/Status.pm`` ``upload``: iso, vztmpl, import), so a snippet is a file written
on the lane's node into the storage's snippets directory (here a ``dir`` storage whose ``path`` is a
temporary directory), and the token never writes it (``SendersPve.senders``)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.qemu.family import QEMU
from salt_proxmox.simple import lifecycle as simple
from salt_proxmox.snippet import adhoc, lifecycle
from salt_proxmox.storage.objects import SPEC as STORAGE
from tests.support.guests import TARGET, make_context, static_targets, vm
from tests.support.pvesh import write_fake_pvesh
from tests.support.saltworld import Low, SaltWorld
from tests.support.snippets import add_snippet_storage


@dataclass
class Lab:
    """The served fake, the targets (with ``root_lane``), the snippets directory of storage ``snip``."""

    served: object
    targets: dict
    directory: Path


USER_DATA = "#cloud-config\nhostname: web\npackages: [nginx]\n"


@pytest.fixture
def lab(fresh_cluster, tmp_path):
    """Storage ``snip`` at a tmp path, and the target's lane through the fake pvesh."""
    add_snippet_storage(fresh_cluster.pve, tmp_path / "store")
    (tmp_path / "store").mkdir()
    targets = static_targets(fresh_cluster)
    targets[TARGET]["root_lane"] = {
        "via": "pvesh",
        "pvesh": str(write_fake_pvesh(fresh_cluster, tmp_path / "bin")),
    }
    return Lab(fresh_cluster, targets, tmp_path / "store" / "snippets")


def _present(targets, store, test, content=USER_DATA, **over):
    """Snippet ``snip:snippets/user.yaml`` planned (``test``) or applied in a run of its own."""
    args = {"name": "user.yaml", "storage": "snip", "content": content, **over}
    return lifecycle.present(make_context(targets, store=store), test, "ud", **args)


def _writes(served, start):
    return [(m, p, who) for m, p, who in served.pve.senders[start:] if m != "GET" and p != "/access/ticket"]


def test_a_snippet_is_planned_written_through_the_lane_and_replans_clean(lab):
    served, targets, directory = lab.served, lab.targets, lab.directory
    store = MemoryStore()
    start = len(served.pve.senders)
    plan = _present(targets, store, True)
    assert plan.result is None, plan.comment
    digest = hashlib.sha256(USER_DATA.encode()).hexdigest()
    assert plan.changes["sha256"] == {"old": None, "new": digest}
    assert plan.changes["size"] == {"old": None, "new": len(USER_DATA.encode())}
    assert "via root lane (pvesh on pve1)" in "\n".join(plan.comment)
    assert (
        "storage snip is not shared: snip:snippets/user.yaml is written on node pve1 only" in plan.comment[0]
    )
    assert not directory.exists(), "a plan writes nothing"
    assert USER_DATA not in repr(plan), "the content is never shown"

    done = _present(targets, store, False)
    assert done.result is True, done.comment
    assert (directory / "user.yaml").read_text() == USER_DATA
    assert oct((directory / "user.yaml").stat().st_mode & 0o777) == "0o644"
    assert [p.name for p in directory.iterdir()] == ["user.yaml"], "no temporary file is left"
    # PVE lists it as root sees it (Plugin.pm get_subdir_files), and no token wrote anything.
    assert _writes(served, start) == []

    again = _present(targets, store, True)
    assert again.result is True and again.changes == {}, again.comment
    assert USER_DATA not in str(store.rows)


def test_a_content_change_is_planned_and_written(lab):
    targets, directory = lab.targets, lab.directory
    store = MemoryStore()
    args = {"name": "user.yaml", "storage": "snip"}
    assert lifecycle.present(
        make_context(targets, store=store), False, "ud", content=USER_DATA, **args
    ).result
    changed = USER_DATA + "runcmd: [reboot]\n"
    plan = lifecycle.present(make_context(targets, store=store), True, "ud", content=changed, **args)
    assert plan.result is None and set(plan.changes) == {"sha256", "size"}, plan.changes
    assert plan.changes["sha256"]["old"] == hashlib.sha256(USER_DATA.encode()).hexdigest()
    done = lifecycle.present(make_context(targets, store=store), False, "ud", content=changed, **args)
    assert done.result is True and (directory / "user.yaml").read_text() == changed
    again = lifecycle.present(make_context(targets, store=store), True, "ud", content=changed, **args)
    assert again.result is True and again.changes == {}


def test_without_a_lane_a_snippet_is_refused_naming_the_lane(lab):
    targets, directory = lab.targets, lab.directory
    del targets[TARGET]["root_lane"]
    for test in (True, False):
        outcome = lifecycle.present(make_context(targets), test, "ud", name="user.yaml", storage="snip",
                                    content=USER_DATA)  # fmt: skip
        assert outcome.result is False
        text = "\n".join(outcome.comment)
        assert f"proxmox:targets:{TARGET}:root_lane: pvesh" in text
        assert "API2/Storage/Status.pm upload" in text
    assert not directory.exists()


def test_a_storage_without_snippets_content_is_refused(lab):
    served, targets = lab.served, lab.targets
    served.pve.storages["snip"]["content"] = "iso,backup"
    outcome = lifecycle.present(
        make_context(targets), True, "ud", name="user.yaml", storage="snip", content="x"
    )
    assert outcome.result is False
    assert "does not include snippets" in "\n".join(outcome.comment)


def test_a_file_this_minion_did_not_write_is_not_taken_over(lab):
    targets, directory = lab.targets, lab.directory
    directory.mkdir()
    (directory / "user.yaml").write_text("by hand\n")
    outcome = lifecycle.present(
        make_context(targets), True, "ud", name="user.yaml", storage="snip", content="x"
    )
    assert outcome.result is False and "adopt: true" in "\n".join(outcome.comment)
    adopted = _present(targets, MemoryStore(), False, content="x", adopt=True)
    assert adopted.result is True and (directory / "user.yaml").read_text() == "x"


def test_a_snippet_a_vm_s_cicustom_names_is_never_deleted(lab):
    """PVE reads a VM's cicustom snippets at its start (qemu-server Cloudinit.pm
    get_custom_cloudinit_files): deleting one from under the VM breaks its next boot."""
    served, targets, directory = lab.served, lab.targets, lab.directory
    store = MemoryStore()
    args = {"name": "user.yaml", "storage": "snip"}
    assert lifecycle.present(
        make_context(targets, store=store), False, "ud", content=USER_DATA, **args
    ).result
    served.pve.vm(300).config["cicustom"] = "user=snip:snippets/user.yaml"
    for test in (True, False):
        outcome = lifecycle.absent(make_context(targets, store=store), test, "ud", removal="destroy", **args)
        assert outcome.result is False, outcome.comment
        assert "VM 300 cicustom" in "\n".join(outcome.comment)
    assert (directory / "user.yaml").exists()
    del served.pve.vm(300).config["cicustom"]
    plan = lifecycle.absent(make_context(targets, store=store), True, "ud", removal="destroy", **args)
    assert plan.result is None and plan.changes == {
        "deleted": {"old": "snip:snippets/user.yaml", "new": None}
    }
    done = lifecycle.absent(make_context(targets, store=store), False, "ud", removal="destroy", **args)
    assert done.result is True and not (directory / "user.yaml").exists()
    assert store.rows == {}


def test_a_cicustom_naming_a_missing_undeclared_snippet_is_refused_at_plan(lab):
    served, targets = lab.served, lab.targets
    start = len(served.pve.senders)
    outcome = guest_lifecycle.present(
        make_context(targets), QEMU, "vm", True, **vm(cicustom="user=snip:snippets/missing.yaml")
    )
    assert outcome.result is False
    text = "\n".join(outcome.comment)
    assert "cicustom: snip:snippets/missing.yaml does not exist on node pve1" in text
    assert "proxmox:snippets:snip:missing.yaml" in text
    assert _writes(served, start) == []


def test_a_cicustom_naming_a_snippet_declared_in_the_run_is_planned(lab):
    targets = lab.targets
    ctx = make_context(targets)
    plan = lifecycle.present(ctx, True, "ud", name="user.yaml", storage="snip", content=USER_DATA)
    assert plan.result is None
    outcome = guest_lifecycle.present(ctx, QEMU, "vm", True, **vm(cicustom="user=snip:snippets/user.yaml"))
    assert outcome.result is None, outcome.comment
    # On a storage that is not shared, a VM on another node would not find it.
    other = guest_lifecycle.present(
        ctx, QEMU, "vm2", True, **vm(151, node="pve2", cicustom="user=snip:snippets/user.yaml")
    )
    assert other.result is False
    assert "written on node pve1 only, but VM 151 runs on node pve2" in "\n".join(other.comment)


def test_a_cicustom_naming_an_existing_snippet_is_planned(lab):
    targets = lab.targets
    assert lifecycle.present(make_context(targets), False, "ud", name="user.yaml", storage="snip",
                             content=USER_DATA).result  # fmt: skip
    outcome = guest_lifecycle.present(
        make_context(targets), QEMU, "vm", True, **vm(cicustom="user=snip:snippets/user.yaml")
    )
    assert outcome.result is None, outcome.comment


def test_a_source_on_the_salt_file_server_is_what_the_state_writes(lab, tmp_path):
    """proxmox_snippet.present with source: salt://... through the skin and the execution module: Salt's
    cp.get_file_str reads it (here SaltWorld's file server), the library compares and writes its text,
    and the text is never a state argument or in a return."""
    world = SaltWorld({"proxmox": {"targets": lab.targets}}, {}, tmp_path / "rows.json")
    world.fetched["salt://proxmox/files/user.yaml"] = USER_DATA
    low = Low("proxmox_snippet", "present", {"name": "user.yaml", "storage": "snip",
                                             "source": "salt://proxmox/files/user.yaml"})  # fmt: skip
    (plan,) = world.run([low], test=True)
    assert (
        plan["result"] is None
        and plan["changes"]["sha256"]["new"] == hashlib.sha256(USER_DATA.encode()).hexdigest()
    )
    (done,) = world.run([low], test=False)
    assert done["result"] is True, done["comment"]
    assert (lab.directory / "user.yaml").read_text() == USER_DATA
    (again,) = world.run([low], test=True)
    assert again["result"] is True and again["changes"] == {}
    assert "nginx" not in repr([plan, done, again])
    world.fetched.clear()
    (missing,) = world.run([low], test=True)
    assert (
        missing["result"] is False
        and "source: salt://proxmox/files/user.yaml cannot be read" in missing["comment"]
    )


def test_the_state_reads_content_from_pillar_and_refuses_it_as_an_argument(lab, tmp_path):
    """proxmox_snippet.present through the skin and the execution module: the content comes from the pillar
    mapping secrets_pillar names (Salt keeps a state's arguments in highstate.cache.p, and cloud-init user
    data may hold secrets); given as an argument, or beside a source, it is refused by name, nothing
    written. The content is in no return, no row and no run cache."""
    pillar = {"proxmox": {"snippets": {"snip": {"user.yaml": {"content": USER_DATA}}}}}
    world = SaltWorld({"proxmox": {"targets": lab.targets}}, pillar, tmp_path / "rows.json")
    ref = {
        "name": "user.yaml",
        "storage": "snip",
        "secrets_pillar": ["proxmox", "snippets", "snip", "user.yaml"],
    }
    direct = Low("proxmox_snippet", "present", {"name": "user.yaml", "storage": "snip", "content": USER_DATA})
    world.fetched["salt://u.yaml"] = "other\n"
    both = Low("proxmox_snippet", "present", {**ref, "source": "salt://u.yaml"})
    for low, words in ((direct, "content: a secret is never a state argument"), (both, "content, source")):
        (refused,) = world.run([low], test=False)
        assert refused["result"] is False and words in refused["comment"], refused["comment"]
    assert "secrets_pillar" in world.run([direct], test=True)[0]["comment"]
    assert not (lab.directory / "user.yaml").exists()
    low = Low("proxmox_snippet", "present", ref)
    (plan,) = world.run([low], test=True)
    assert (
        plan["result"] is None
        and plan["changes"]["sha256"]["new"] == hashlib.sha256(USER_DATA.encode()).hexdigest()
    )
    (done,) = world.run([low], test=False)
    assert done["result"] is True, done["comment"]
    assert (lab.directory / "user.yaml").read_text() == USER_DATA
    (again,) = world.run([low], test=True)
    assert again["result"] is True and again["changes"] == {}
    kept = repr([plan, done, again]) + repr(world.context) + world.rows_file.read_text()
    assert "nginx" not in kept


def test_a_cicustom_whose_snippet_cannot_be_looked_up_is_refused_never_passed(lab):
    """A failed read is never absence, nor presence: the guest's plan is refused naming the read."""
    lab.served.pve.fail("GET", "/cluster/status", 500, "got timeout")
    outcome = guest_lifecycle.present(
        make_context(lab.targets), QEMU, "vm", True, **vm(cicustom="user=snip:snippets/user.yaml")
    )
    assert outcome.result is False
    assert "whether snip:snippets/user.yaml exists on node pve1 cannot be read" in "\n".join(outcome.comment)


def test_a_snippet_changed_by_hand_is_never_destroyed(lab):
    store = MemoryStore()
    assert _present(lab.targets, store, False).result is True
    (lab.directory / "user.yaml").write_text("edited on the node\n")
    outcome = lifecycle.absent(make_context(lab.targets, store=store), False, "ud", name="user.yaml",
                               storage="snip", removal="destroy")  # fmt: skip
    assert outcome.result is False and "no longer what this minion wrote" in "\n".join(outcome.comment)
    assert (lab.directory / "user.yaml").read_text() == "edited on the node\n"


def test_the_ad_hoc_read_shows_the_hash_never_the_content(lab):
    ctx = make_context(lab.targets)
    assert adhoc.get(ctx, "user.yaml", "snip") is None
    assert _present(lab.targets, MemoryStore(), False).result is True
    found = adhoc.get(make_context(lab.targets), "user.yaml", "snip")
    assert found == {
        "volid": "snip:snippets/user.yaml",
        "node": "pve1",
        "sha256": hashlib.sha256(USER_DATA.encode()).hexdigest(),
        "size": len(USER_DATA),
        "mode": "0o644",
    }


def test_a_snippet_on_a_storage_this_run_creates_is_planned(lab, tmp_path):
    """The storage does not exist yet: its declaration, planned earlier in the run, says where it will be."""
    ctx = make_context(lab.targets)
    storage = simple.present(ctx, STORAGE, True, "st", name="snip2", type="dir", path=str(tmp_path / "s2"),
                             content="snippets,iso")  # fmt: skip
    assert storage.result is None, storage.comment
    plan = lifecycle.present(ctx, True, "ud", name="u.yaml", storage="snip2", content="x")
    assert plan.result is None and "created" in plan.changes, plan.comment
    assert f"to {tmp_path / 's2' / 'snippets'}" in plan.comment[-1]
