"""Which guests an enabled backup job covers (``salt_proxmox.backup.coverage.judge``), as vzdump chooses a
job's guests (pve-manager ``PVE/VZDump.pm`` ``get_included_guests``), and the plan outputter's run notes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from salt_proxmox.backup.coverage import Job, judge, note_text
from salt_proxmox.outcome import Outcome

REPO = Path(__file__).resolve().parents[2]
GUESTS = [("lxc", 120, "pve1", None), ("qemu", 300, "pve2", "prod"), ("lxc", 150, "pve1", "prod")]


def test_a_vmid_job_covers_the_listed_guests():
    result = judge({"a": Job("a", vmids=frozenset({120, 300}))}, GUESTS)
    assert result.covering == {"CT 120": ["a"], "VM 300": ["a"], "CT 150": []}
    assert result.uncovered == ["CT 150"]


def test_a_disabled_job_covers_nothing():
    """PVE's /cluster/backup-info/not-backed-up counts a disabled job (BackupInfo.pm get_included_vmids
    reads every job); the product does not: a disabled job backs nothing up."""
    result = judge({"a": Job("a", enabled=False, all=True)}, GUESTS)
    assert result.uncovered == ["CT 120", "VM 300", "CT 150"]


def test_all_covers_every_guest_but_the_excluded_ones():
    result = judge({"a": Job("a", all=True, exclude=frozenset({300}))}, GUESTS)
    assert result.uncovered == ["VM 300"]


def test_a_pool_job_covers_the_pools_members():
    result = judge({"a": Job("a", pool="prod")}, GUESTS)
    assert result.uncovered == ["CT 120"]


def test_a_job_with_a_node_covers_only_the_guests_on_that_node():
    """get_included_guests: ``next if (defined $job->{node} && $job->{node} ne $node)``."""
    result = judge({"a": Job("a", all=True, node="pve1")}, GUESTS)
    assert result.uncovered == ["VM 300"]


def test_the_note_names_the_uncovered_guests_then_who_covers_the_others():
    result = judge(
        {"b": Job("b", vmids=frozenset({120})), "a": Job("a", all=True, exclude=frozenset({150}))}, GUESTS
    )
    assert note_text(result) == (
        "backup coverage: no enabled backup job covers CT 150; covered: CT 120 by a, b; VM 300 by a"
    )


def _outputter():
    spec = importlib.util.spec_from_file_location("proxmox_plan", REPO / "_output" / "proxmox_plan.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_run_note_is_printed_once_after_the_summary_whichever_state_carries_it():
    note = "backup coverage: no enabled backup job covers CT 150"
    carrying = Outcome(result=None, changes={"memory": {"old": 512, "new": 1024}}, run_notes=[note])
    returns = {
        "proxmox_lxc_|-web_|-web_|-present": {**carrying.salt_return("web"), "__run_num__": 0},
        "proxmox_lxc_|-db_|-db_|-present": {**Outcome().salt_return("db"), "__run_num__": 1},
    }
    text = _outputter().render({"local": returns}, test=True)
    assert text.count(note) == 1
    assert text.splitlines()[-2:] == ["Notes:", f"  * {note}"]
    assert note in carrying.salt_return("web")["comment"], "highstate's own output shows it in the comment"
