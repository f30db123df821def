"""Pending changes, pure: reading ``GET …/pending``, which keys a running container takes at once,
and the judge against the values in effect and the pending section.

PVE sources: pve-guest-common ``PVE::GuestHelpers::config_with_pending_array`` (the rows: ``key``,
``value`` in effect, ``pending``, ``delete`` 1 or 2 for a forced delete; ``digest`` is a row because
``load_config`` puts it in the config hash), pve-container ``src/PVE/LXC/Config.pm``
``$LXC_FASTPLUG_OPTIONS`` and ``vmconfig_hotplug_pending`` (what a running container takes at once),
``vmconfig_apply_pending`` (a stopped one takes everything), pve-guest-common ``AbstractConfig``
``cleanup_pending`` (a pending value equal to the value in effect is dropped).
"""

from __future__ import annotations

import pytest

from salt_proxmox.errors import DeclarationError
from salt_proxmox.guest.pending import GuestConfig, PendingRowsError
from salt_proxmox.guest.verdict import judge_guest, split_by_effect
from salt_proxmox.lxc import schema
from salt_proxmox.lxc.family import LXC
from salt_proxmox.lxc.props import parse_declaration

MAC = "BC:24:11:00:00:01"
CURRENT = {
    "hostname": "web",
    "memory": 1024,
    "swap": 512,
    "ostype": "debian",
    "arch": "amd64",
    "rootfs": "local-zfs:subvol-150-disk-0,size=8G",
    "net0": f"name=eth0,bridge=vmbr0,hwaddr={MAC},ip=dhcp,type=veth",
    "unprivileged": 1,
}


def decl(**config):
    base = {
        "hostname": "web",
        "memory": 1024,
        "rootfs": "local-zfs:8",
        "net0": "name=eth0,bridge=vmbr0,ip=dhcp",
    }
    return parse_declaration("web", vmid=150, node="pve1", target="lab", config={**base, **config})


def guest(pending=None, deletes=(), **current):
    return GuestConfig(current={**CURRENT, **current}, digest="d1", pending=dict(pending or {}),
                       deletes=frozenset(deletes))  # fmt: skip


# ---------------------------------------------------------------------------------- reading rows


def test_rows_as_pve_answers_them_give_current_pending_deletes_and_digest():
    rows = [
        {"key": "digest", "value": "abc123"},
        {"key": "memory", "value": 512, "pending": 1024},
        {"key": "hostname", "value": "web"},
        {"key": "nameserver", "pending": "10.0.0.1"},
        {"key": "searchdomain", "value": "lab", "delete": 1},
        {"key": "cpulimit", "delete": 2},  # a forced delete of a key no longer set
    ]
    config = GuestConfig.from_rows(rows)
    assert config.digest == "abc123"
    assert config.current == {"memory": 512, "hostname": "web", "searchdomain": "lab"}
    assert config.pending == {"memory": 1024, "nameserver": "10.0.0.1"}
    assert config.deletes == {"searchdomain", "cpulimit"}
    assert config.merged() == {
        "memory": 1024,
        "hostname": "web",
        "nameserver": "10.0.0.1",
        "digest": "abc123",
    }
    assert config.in_effect() == {"memory": 512, "hostname": "web", "searchdomain": "lab", "digest": "abc123"}
    assert config.waiting() == ["cpulimit", "memory", "nameserver", "searchdomain"]
    assert GuestConfig.from_rows(config.rows()) == config


@pytest.mark.parametrize(
    "rows",
    [
        pytest.param({"digest": "abc"}, id="an-object"),
        pytest.param(None, id="null"),
        pytest.param([], id="no-rows"),
        pytest.param([{"key": "memory", "value": 512}], id="no-digest-row"),
        pytest.param([{"key": "digest", "value": ""}], id="empty-digest"),
        pytest.param([{"key": "digest", "value": "a"}, {"value": 1}], id="row-without-key"),
        pytest.param([{"key": "digest", "value": "a"}, "memory"], id="row-not-an-object"),
        pytest.param(
            [{"key": "digest", "value": "a"}, {"key": "swap", "delete": 5}], id="delete-out-of-range"
        ),
    ],
)
def test_rows_without_the_shape_pve_gives_are_refused(rows):
    with pytest.raises(PendingRowsError):
        GuestConfig.from_rows(rows)


# ------------------------------------------------------------------- what a running CT takes live


@pytest.mark.parametrize(
    ("key", "clear", "exists", "live"),
    [
        ("hostname", False, True, True),  # $LXC_FASTPLUG_OPTIONS
        ("cores", False, True, True),
        ("tags", True, True, True),
        ("description", True, True, True),
        ("memory", False, True, True),  # cgroup
        ("swap", False, True, True),
        ("cpulimit", True, True, True),
        ("cpuunits", True, True, True),
        ("net0", False, True, True),  # update_net
        ("net1", True, True, True),
        ("mp0", False, False, True),  # a new mount point is hot-plugged
        ("mp0", False, True, False),  # "don't try to hotplug over existing mp"
        ("mp0", True, True, False),
        ("rootfs", False, True, False),
        ("nameserver", False, False, False),
        ("searchdomain", True, True, False),
        ("features", False, True, False),
        ("timezone", False, True, False),
        ("memory", True, True, False),  # only swap, cpulimit, cpuunits, netN, unusedN removals are live
    ],
)
def test_applies_live_follows_vmconfig_hotplug_pending(key, clear, exists, live):
    assert schema.applies_live(key, clear, exists) is live


# ----------------------------------------------------------------------------------- the judge


def test_a_declared_value_that_waits_is_not_written_again_and_is_reported():
    verdict = judge_guest(LXC, decl(nameserver="10.0.0.1"), guest({"nameserver": "10.0.0.1"}))
    assert not verdict.change.writes and verdict.change.drift == []
    assert verdict.waiting == ["nameserver"] and verdict.conflicts == []
    assert verdict.drift_in_effect == ["nameserver"]


def test_somebody_elses_pending_value_is_refused_with_revert_not_overwritten():
    verdict = judge_guest(LXC, decl(nameserver="10.0.0.1", memory=2048), guest({"nameserver": "9.9.9.9"}))
    assert len(verdict.conflicts) == 1
    assert "`pct set 150 --revert nameserver`" in verdict.conflicts[0]
    assert "nameserver" not in verdict.change.put, "a refused key is not part of the write"
    assert verdict.change.put == {"memory": "2048"}, "the rest of the change stays listed"
    assert verdict.refuse == verdict.conflicts


def test_a_pending_removal_of_a_declared_key_is_a_conflict():
    verdict = judge_guest(
        LXC, decl(nameserver="10.0.0.1"), guest(deletes={"nameserver"}, nameserver="10.0.0.1")
    )
    assert verdict.conflicts and "pending removal" in verdict.conflicts[0]


def test_a_pending_value_this_state_declared_before_is_rewritten():
    before = decl(nameserver="10.0.0.2")
    verdict = judge_guest(LXC, decl(nameserver="10.0.0.1"), guest({"nameserver": "10.0.0.2"}), ours=before)
    assert verdict.conflicts == [] and verdict.change.put == {"nameserver": "10.0.0.1"}


def test_an_undeclared_pending_change_is_a_note_not_a_refusal():
    verdict = judge_guest(LXC, decl(), guest({"searchdomain": "lab"}))
    assert verdict.refuse == [] and not verdict.change.writes
    assert len(verdict.undeclared) == 1 and "`pct set 150 --revert searchdomain`" in verdict.undeclared[0]


def test_the_description_is_shown_by_its_length_only():
    verdict = judge_guest(LXC, decl(description="mine"), guest({"description": "a private note\n"}))
    assert "a private note" not in " ".join(verdict.conflicts)
    assert "<14 characters>" in verdict.conflicts[0]


def test_split_by_effect_on_a_running_and_a_stopped_container():
    verdict = judge_guest(LXC, decl(memory=2048, nameserver="10.0.0.1", rootfs="local-zfs:16"), guest())
    assert split_by_effect(LXC, verdict, guest(), running=True) == (["memory", "rootfs"], ["nameserver"])
    assert split_by_effect(LXC, verdict, guest(), running=False) == (["memory", "nameserver", "rootfs"], [])


def test_a_write_back_to_the_value_in_effect_only_drops_the_pending_change():
    # cleanup_pending: a pending value equal to the value in effect is dropped, so it is live at once.
    ours = decl(nameserver="10.0.0.2")
    config = guest({"nameserver": "10.0.0.2"}, nameserver="10.0.0.1")
    verdict = judge_guest(LXC, decl(nameserver="10.0.0.1"), config, ours=ours)
    assert verdict.change.put == {"nameserver": "10.0.0.1"}
    assert split_by_effect(LXC, verdict, config, running=True) == (["nameserver"], [])


@pytest.mark.parametrize("value", ["yes", 1, None, [True]])
def test_reboot_for_pending_is_true_or_false_only(value):
    with pytest.raises(DeclarationError, match="reboot_for_pending: expected true or false"):
        parse_declaration("web", vmid=150, node="pve1", target="lab", reboot_for_pending=value)


def test_reboot_for_pending_is_off_unless_declared():
    assert decl().reboot_for_pending is False
    on = parse_declaration("web", vmid=150, node="pve1", target="lab", reboot_for_pending=True)
    assert on.reboot_for_pending is True and "reboot_for_pending" not in on.stored()


@pytest.mark.parametrize(
    ("config", "judgements"),
    [
        pytest.param(guest(memory=2048), 1, id="nothing-pending"),
        pytest.param(guest({"memory": 2048}), 2, id="memory-pending"),
        pytest.param(guest(deletes={"swap"}), 2, id="a-removal-pending"),
    ],
)
def test_with_nothing_pending_one_judgement_serves_in_effect_and_merged(monkeypatch, config, judgements):
    # GuestConfig.merged is the values in effect with the pending section applied: with nothing
    # pending they are the same config, and judging it twice was a per-guest cost of every plan.
    from salt_proxmox.guest import verdict as shared
    from salt_proxmox.lxc.family import LXC

    calls = []
    real = LXC.judge
    counting = type(LXC)(**{**vars(LXC), "judge": lambda *a: calls.append(1) or real(*a)})
    once = shared.judge_guest(counting, decl(), config)
    assert len(calls) == judgements
    merged = real(decl(), config.merged())
    in_effect = real(decl(), config.in_effect())
    assert once.change.drift == merged.drift and once.drift_in_effect == in_effect.drift
