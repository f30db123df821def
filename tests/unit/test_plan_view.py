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


def _run(*returns: dict) -> dict:
    return {f"{ret.pop('tag')}": {"__run_num__": index, **ret} for index, ret in enumerate(returns)}


NOTHING = {"tag": "proxmox_pool_|-p_|-p_|-present", "result": True, "changes": {}, "comment": "as declared"}
FAILED = {"tag": "proxmox_pool_|-q_|-q_|-present", "result": False, "changes": {}, "comment": "Refused: x"}


@pytest.mark.parametrize(
    ("opts", "label"),
    [
        # salt-call and salt keep the command line in opts['arg'] (salt/cli/caller.py, salt/cli/salt.py).
        ({"fun": "state.apply", "arg": ["proxmox"]}, "Apply:"),
        ({"fun": "state.apply", "arg": ["proxmox", "test=True"]}, "Plan:"),
        ({"fun": "state.apply", "arg": ["proxmox", {"test": True, "__kwarg__": True}]}, "Plan:"),
        ({"fun": "state.apply", "arg": ["proxmox", "test=false"]}, "Apply:"),
        ({"test": True, "fun": "state.apply", "arg": ["proxmox"]}, "Plan:"),
    ],
)
def test_an_apply_is_labelled_apply_whatever_its_outcome(opts, label):
    """Nothing changed, or everything failed: the returns of an apply look like a plan's, so the
    label comes from the command (``test`` is an argument of ``state.apply``, never an option)."""
    plan = outputter()
    plan.__opts__ = {"color": False, **opts}
    for returns in (_run(dict(NOTHING)), _run(dict(FAILED)), _run(dict(NOTHING), dict(FAILED))):
        summary = [line for line in plan.output({"local": returns}).splitlines() if line.endswith(".")][-1]
        assert summary.startswith(label), summary
    failed = plan.output({"local": _run(dict(FAILED))})
    assert ("1 refused" if label == "Plan:" else "1 failed") in failed.splitlines()[-2], failed


def test_ownership_only_changes_are_counted_apart_from_pve_writes():
    plan = outputter()
    returns = _run(
        {
            "tag": "proxmox_pool_|-proxmox-pool-lab_|-lab_|-present",
            "result": None,
            "changes": {"ownership": {"old": None, "new": "owned"}},
            "comment": "pool lab: would adopt",
        },
        {
            "tag": "proxmox_qemu_|-proxmox-qemu-old_|-old_|-absent",
            "result": None,
            "changes": {"ownership": {"old": "owned", "new": None}},
            "comment": "VM 300 on pve2 is retained untouched; would forget ownership",
        },
        {
            "tag": "proxmox_lxc_|-proxmox-lxc-dns_|-dns_|-present",
            "result": None,
            "changes": {"memory": {"old": "512", "new": "1024"}, "ownership": {"old": None, "new": "owned"}},
            "comment": "",
        },
    )
    lines = plan.render({"local": returns}, test=True).splitlines()
    assert lines[:3] == [
        "o proxmox-pool-lab (proxmox_pool.present)",
        "    ownership: (none) → owned",
        "    # pool lab: would adopt",
    ], lines
    assert lines[-4:] == [
        "Plan: 0 to create, 1 to update, 0 to destroy, 0 pending restart, 2 ownership only, 0 refused, 0 no change.",  # noqa: E501
        "  lxc: 0 to create, 1 to update, 0 to destroy, 0 pending restart, 0 refused, 0 no change",
        "  pool: 0 to create, 0 to update, 0 to destroy, 0 pending restart, 1 ownership only, 0 refused, 0 no change",  # noqa: E501
        "  qemu: 0 to create, 0 to update, 0 to destroy, 0 pending restart, 1 ownership only, 0 refused, 0 no change",  # noqa: E501
    ]


def test_a_vm_s_property_strings_are_shown_per_sub_key_as_a_container_s():
    plan = outputter()
    changes = {
        "net0": {
            "old": "virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=20",
            "new": "virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=30",
        },
        "scsi0": {
            "old": "local-lvm:vm-150-disk-0,iothread=1,size=8G",
            "new": "local-lvm:vm-150-disk-0,iothread=1,size=16G",
        },
        "cpu": {"old": "x86-64-v2-AES", "new": "host"},
        "ipconfig0": {"old": "ip=dhcp", "new": "ip=10.0.0.5/24,gw=10.0.0.1"},
        "memory": {"old": "2048", "new": "4096"},
        "name": {"old": "a", "new": "b"},
    }
    assert plan.change_lines("proxmox_qemu", changes) == [
        "net0: tag 20 → 30",
        "scsi0: size 8G → 16G",
        "cpu: cputype x86-64-v2-AES → host",
        "ipconfig0: ip dhcp → 10.0.0.5/24, gw (none) → 10.0.0.1",
        "memory: current 2048 → 4096",
        "name: a → b",
    ]


@pytest.mark.parametrize(
    "key",
    ["net0", "scsi0", "virtio3", "ide2", "sata1", "efidisk0", "tpmstate0", "ipconfig0", "hostpci0", "usb1",
     "cpu", "memory", "agent", "vga", "smbios1", "cicustom", "startup", "name", "cores", "boot", "tags"],
)  # fmt: skip
def test_the_outputter_s_vm_property_keys_are_the_schema_s(key):
    """The outputter imports nothing of the library (it runs where output is printed): its table of VM
    property strings is pinned here to ``salt_proxmox.qemu.schema.property_format``."""
    from salt_proxmox.qemu import schema

    is_property, bare = outputter().property_key("proxmox_qemu", key)
    form = schema.property_format(key)
    assert is_property == (form is not None)
    if form is not None:
        assert bare == form.default_key


def test_node_network_and_sdn_applies_are_printed_as_diffs():
    plan = outputter()
    diff = (
        "--- /etc/network/interfaces\n+++ /etc/network/interfaces.new\n@@ -1 +1,2 @@\n auto lo\n+auto vmbr1\n"
    )
    planned = {"reload": {"diff": diff, "planned": ["proxmox-network-pve1-vmbr1"]}}
    assert plan.change_lines("proxmox_network", planned) == [
        "reload:",
        *(f"  {line}" for line in diff.splitlines()),
        "  planned: proxmox-network-pve1-vmbr1",
    ]
    # After the apply the return names what was applied, never the staged text itself (network/apply.py).
    done = {"reload": {"old": "2 staged line(s)", "new": "applied"}}
    assert plan.change_lines("proxmox_sdn", done) == ["reload: 2 staged line(s) → applied"]
    assert plan.change_lines("proxmox_network", {"reload": {"planned": ["a", "b"]}}) == [
        "reload:",
        "  planned: a, b",
    ]


def _unreachable(target: str, path: str) -> dict:
    return {
        "tag": f"proxmox_lxc_|-proxmox-lxc-{path}_|-{path}_|-present",
        "result": False,
        "changes": {},
        "comment": f"GET /nodes/pve1/lxc/{path}: no member of target {target} answered "
        "(https://10.0.0.1:8006: connection refused). Check the members' addresses.",
    }


def test_a_fleet_names_each_minion_and_cluster_folds_an_unreachable_cluster_and_ends_with_one_summary():
    plan = outputter()
    data = {
        "pve-b": _run(*(_unreachable("lab", str(vmid)) for vmid in (150, 151, 152))),
        "pve-a": _run(
            {
                "tag": "proxmox_pool_|-proxmox-pool-prod_|-prod_|-present",
                "result": True,
                "changes": {"created": {"old": None, "new": "pool prod"}},
                "comment": "pool prod has been created",
                "target": "homelab",
            },
            {**NOTHING, "target": "homelab"},
        ),
    }
    lines = plan.render(data, test=False).splitlines()
    assert lines[0] == "pve-a (cluster homelab):"
    at = lines.index("pve-b (cluster lab):")
    assert lines[at + 1] == "! cluster lab unreachable: 3 states not run", lines
    assert lines[at + 2].startswith("    # GET /nodes/pve1/lxc/150: no member of target lab answered")
    assert sum("no member of target lab answered" in line for line in lines) == 1
    assert not any(line.startswith("! proxmox-lxc-") for line in lines), "no refusal per state"
    assert lines[-5:] == [
        "Apply: 1 created, 0 updated, 0 destroyed, 0 pending restart, 0 failed, 3 unreachable, 1 no change.",
        "  lxc: 0 created, 0 updated, 0 destroyed, 0 pending restart, 0 failed, 3 unreachable, 0 no change",
        "  pool: 1 created, 0 updated, 0 destroyed, 0 pending restart, 0 failed, 1 no change",
        "  minion pve-a (cluster homelab): 1 created, 0 updated, 0 destroyed, 0 pending restart, 0 failed, 1 no change",  # noqa: E501
        "  minion pve-b (cluster lab): 0 created, 0 updated, 0 destroyed, 0 pending restart, 0 failed, 3 unreachable, 0 no change",  # noqa: E501
    ]
