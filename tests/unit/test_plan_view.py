"""Plans that read like a diff: what a return shows per changed key (``judge.key_change``,
``propstring.changed_options``) and how the ``proxmox_plan`` outputter prints a run (no server)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from salt_proxmox.lxc.judge import key_change
from salt_proxmox.lxc.schema import NET
from salt_proxmox.wire.propstring import changed_options, option_map, pve_order

REPO = Path(__file__).resolve().parents[2]
LIVE_NET = "name=eth1,bridge=vmbr0,hwaddr=BC:24:11:00:00:01,ip=dhcp,tag=42,type=veth"


def outputter():
    spec = importlib.util.spec_from_file_location("proxmox_plan", REPO / "_output" / "proxmox_plan.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("key", "old", "new", "shown"),
    [
        # Only the sub-key that changes, whatever order each side was written in.
        ("net1", LIVE_NET, "ip=dhcp,tag=43,bridge=vmbr0,name=eth1,hwaddr=BC:24:11:00:00:01",
         ("tag=42", "tag=43")),
        # A sub-key missing on one side is the family's default there (firewall 0: $netconf_desc).
        ("net1", LIVE_NET, LIVE_NET + ",firewall=1", ("firewall=0", "firewall=1")),
        # ...or, with no default (tag), is left out of that side.
        ("net1", LIVE_NET, LIVE_NET.replace(",tag=42", ""), ("tag=42", "")),
        # PVE prints name first (required in $netconf_desc), then sorted keys.
        ("net1", "name=eth1,bridge=vmbr0,mtu=1500", "name=eth1,bridge=vmbr1,mtu=9000",
         ("bridge=vmbr0,mtu=1500", "bridge=vmbr1,mtu=9000")),
        # A flag compares by value: true and 1 are one value (pve-common JSONSchema check_type).
        ("net1", LIVE_NET + ",firewall=1", LIVE_NET + ",firewall=true", ("", "")),
        # A new NIC is shown whole, in PVE's order; a removed one whole on the old side.
        ("net1", None, "bridge=vmbr0,name=eth1,ip=dhcp", (None, "name=eth1,bridge=vmbr0,ip=dhcp")),
        ("net1", LIVE_NET, "", (LIVE_NET, "")),
        # Mount points: the bare volume first (default key), mp next (required in $mp_desc).
        ("mp0", None, "backup=1,local-zfs:20,mp=/srv", (None, "local-zfs:20,mp=/srv,backup=1")),
        ("mp0", "local-zfs:vm-1-disk-1,mp=/srv,size=20G", "local-zfs:vm-1-disk-1,mp=/srv,size=20G,backup=1",
         ("backup=0", "backup=1")),
        ("features", "nesting=1", "keyctl=1,nesting=1", ("keyctl=0", "keyctl=1")),
        # startup: order is the default key of pve-startup-order.
        ("startup", "order=2,up=30", "up=60,order=2", ("up=30", "up=60")),
        ("memory", "512", "1024", ("512", "1024")),
    ],
)  # fmt: skip
def test_a_return_shows_only_what_changes(key, old, new, shown):
    assert key_change(key, old, new) == {"old": shown[0], "new": shown[1]}


def test_a_description_is_a_unified_diff_without_trailing_white_space():
    # PVE hands each description line back with "\n" appended (pve-container Config.pm parse_pct_config);
    # the judge compares without trailing white space, so the diff does too.
    assert key_change("description", "one\ntwo\n", "one\nthree") == {
        "diff": "--- description (PVE)\n+++ description (declared)\n@@ -1,2 +1,2 @@\n one\n-two\n+three\n"
    }
    cleared = key_change("description", "one\n", "")["diff"]
    assert cleared.splitlines()[:2] == ["--- description (PVE)", "+++ /dev/null"] and "-one" in cleared


def test_keys_never_stored_but_the_description_stay_masked():
    assert key_change("env", "TOKEN=s3cret", "TOKEN=other") == {
        "old": "<12 characters>",
        "new": "<11 characters>",
    }


OPTIONS = st.dictionaries(
    st.sampled_from(["name", "bridge", "ip", "tag", "mtu", "firewall", "rate"]),
    st.sampled_from(["eth0", "vmbr0", "dhcp", "42", "1", "0", "1500"]),
    min_size=1,
)


@given(OPTIONS, OPTIONS)
def test_nothing_is_shown_exactly_when_the_judge_sees_no_drift(old, new):
    live = ",".join(f"{k}={v}" for k, v in old.items())
    want = ",".join(f"{k}={v}" for k, v in new.items())
    shown_old, shown_new = changed_options(live, want, NET)
    assert (shown_old == shown_new == "") == (option_map(live, NET) == option_map(want, NET))
    for side in (shown_old, shown_new):
        keys = [item.partition("=")[0] for item in side.split(",") if item]
        assert keys == pve_order(keys, NET)


def test_the_outputter_marks_each_state_and_counts_each_family():
    plan = outputter()
    data = {
        "local": {
            "proxmox_lxc_|-proxmox-lxc-dns_|-dns_|-present": {
                "result": None,
                "__run_num__": 1,
                "changes": {
                    "net1": {"old": "tag=42", "new": "tag=43,firewall=1"},
                    "description": {"diff": "--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n"},
                    "pending": {"memory": {"old": "512", "new": "1024"}},
                },
                "comment": "CT 120 on pve1: would write net1",
            },
            "proxmox_lxc_|-proxmox-lxc-web_|-web_|-present": {
                "result": None,
                "__run_num__": 0,
                "changes": {
                    "created": {"old": None, "new": "CT 150 on pve1"},
                    "memory": {"old": None, "new": "1"},
                },
                "comment": "",
            },
            "proxmox_role_|-proxmox-role-R_|-R_|-present": {
                "result": None,
                "__run_num__": 2,
                "changes": {"privs": {"old": ["A", "B"], "new": ["A", "C"]}},
                "comment": "",
            },
            "proxmox_pool_|-proxmox-pool-old_|-old_|-absent": {
                "result": None,
                "__run_num__": 3,
                "changes": {"deleted": {"old": "pool old", "new": None}},
                "comment": "",
            },
            "proxmox_pool_|-proxmox-pool-x_|-x y_|-present": {
                "result": False,
                "__run_num__": 4,
                "changes": {},
                "comment": "Refused: name\nNothing was written.",
            },
            "proxmox_lxc_|-proxmox-lxc-db_|-db_|-present": {"result": True, "__run_num__": 5, "changes": {}},
            "proxmox_lxc_|-proxmox-lxc-mx_|-mx_|-present": {
                "result": None,
                "__run_num__": 6,
                "changes": {"pending": {"swap": {"old": "512", "new": "1024"}}},
                "comment": "",
            },
        }
    }
    assert plan.render(data, test=True).splitlines() == [
        "+ proxmox-lxc-web (proxmox_lxc.present)",
        "    created: CT 150 on pve1",
        "    memory: 1",
        "~ proxmox-lxc-dns (proxmox_lxc.present)",
        "    net1: tag 42 → 43, firewall (none) → 1",
        "    description:",
        "      --- a",
        "      +++ b",
        "      @@ -1 +1 @@",
        "      -x",
        "      +y",
        "    pending until restart:",
        "      memory: 512 → 1024",
        "    # CT 120 on pve1: would write net1",
        "~ proxmox-role-R (proxmox_role.present)",
        "    privs: +C -B",
        "- proxmox-pool-old (proxmox_pool.absent)",
        "    deleted: pool old → (none)",
        "! proxmox-pool-x (proxmox_pool.present)",
        "    # Refused: name",
        "    # Nothing was written.",
        "~ proxmox-lxc-mx (proxmox_lxc.present)",
        "    pending until restart:",
        "      swap: 512 → 1024",
        "Plan: 1 to create, 2 to update, 1 to destroy, 1 pending restart, 1 refused, 1 no change.",
        "  lxc: 1 to create, 1 to update, 0 to destroy, 1 pending restart, 0 refused, 1 no change",
        "  pool: 0 to create, 0 to update, 1 to destroy, 0 pending restart, 1 refused, 0 no change",
        "  role: 0 to create, 1 to update, 0 to destroy, 0 pending restart, 0 refused, 0 no change",
    ]


def test_the_outputter_tells_plan_from_apply_and_prints_render_errors():
    plan = outputter()
    applied = {"local": {"proxmox_pool_|-p_|-p_|-present": {"result": True, "changes": {"created": {}}}}}
    assert plan.applied(applied) and plan.output(applied).splitlines()[-2].startswith("Apply: 1 created")
    clean = {"local": {"proxmox_pool_|-p_|-p_|-present": {"result": True, "changes": {}}}}
    assert not plan.applied(clean) and plan.output(clean).splitlines()[-2].startswith("Plan: 0 to create")
    rendered = plan.render({"local": ["Rendering SLS 'base:proxmox' failed"]}, test=True).splitlines()
    assert rendered[0] == "! Rendering SLS 'base:proxmox' failed"
    assert rendered[1].endswith("1 refused, 0 no change.") and rendered[2].startswith("  render: ")
