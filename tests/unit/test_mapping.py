"""Pure rules of resource mappings (salt_proxmox.datacenter.mappings and mapping_use), each beside its
pve-manager (``PVE/API2/Cluster/Mapping/{PCI,USB,Dir}.pm``), pve-guest-common (``src/PVE/Mapping/*.pm``)
or qemu-server source."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from salt_proxmox.datacenter import mapping_use, mappings
from salt_proxmox.errors import DeclarationError, Refused
from salt_proxmox.pve.errors import PveError
from salt_proxmox.pve.facts import Release
from salt_proxmox.qemu.judge import device_rule
from salt_proxmox.simple.spec import remember

GPU = "node=pve1,path=0000:01:00.0,id=10de:1eb8,iommugroup=14,subsystem-id=10de:12a2"


def _pci(**options):
    return mappings.PCI.declare("sid", "lab", name="gpu", **{"map": [GPU], **options})


def test_entries_compare_as_a_set_by_meaning():
    # Mapping/PCI.pm $map_fmt: a property string, its keys in any order; get returns the map as stored.
    decl = _pci(map=[{"node": "pve2", "path": "0000:02:00.0", "id": "10de:1eb8", "iommugroup": 20}, GPU])
    live = mappings.PCI.parse(
        {
            "type": "pci",
            "map": [
                "iommugroup=14,id=10de:1eb8,node=pve1,subsystem-id=10de:12a2,path=0000:01:00.0",
                "node=pve2,id=10de:1eb8,path=0000:02:00.0,iommugroup=020",
            ],
            "digest": "d1",
        },
        decl,
    )
    assert mappings.PCI.differences(live, decl) == {}
    assert mappings.PCI.update(decl, live) is None


def test_hex_is_written_lowercase_as_sysfs_spells_it():
    # PCI.pm assert_valid compares sysfs's lowercase vendor:device with the entry by `ne`: an uppercase
    # id would be reported invalid ("'id' does not match"), so a declared one is written lowercase and a
    # live uppercase one differs.
    decl = _pci(map=["node=pve1,path=0000:01:00.0,id=10DE:1EB8,iommugroup=14,subsystem-id=10DE:12A2"])
    assert decl.values["map"] == [
        "node=pve1,id=10de:1eb8,iommugroup=14,path=0000:01:00.0,subsystem-id=10de:12a2"
    ]
    live = mappings.PCI.parse({"type": "pci", "map": [GPU.upper().replace("NODE=PVE1", "node=pve1")]}, decl)
    assert "map" in mappings.PCI.differences(live, decl)


def test_an_update_sends_the_whole_map_the_digest_and_delete_for_defaults():
    # Mapping/PCI.pm options: map => {} (required, never deleted); update asserts the digest
    # (assert_if_modified) and delete_from_config drops a flag back to its default 0.
    decl = _pci(mdev=False, description="")
    live = mappings.PCI.parse(
        {"type": "pci", "map": [GPU], "mdev": 1, "description": "old", "digest": "d1"}, decl
    )
    call = mappings.PCI.update(decl, live)
    assert call.method == "PUT" and call.path == "cluster/mapping/pci/gpu" and call.json
    assert call.form == {"map": list(decl.values["map"]), "delete": "description,mdev", "digest": "d1"}
    create = mappings.PCI.create(_pci(mdev=True))
    assert create.path == "cluster/mapping/pci" and create.form["id"] == "gpu" and create.form["mdev"] == "1"


@pytest.mark.parametrize(
    "kind, entries, key, words",
    [
        # Mapping/PCI.pm $map_fmt path: [a-f0-9]{4,}:..: the domain is required (hostpciN host= may omit it).
        ("pci", ["node=pve1,path=01:00.0,id=10de:1eb8"], "map[0]", "the domain included"),
        ("pci", ["node=pve1,path=0000:01:00.0"], "map[0]", "id: required"),
        ("pci", ["path=0000:01:00.0,id=10de:1eb8"], "map[0]", "node: required"),
        ("pci", ["node=pve1,path=0000:01:00.0,id=10de"], "map[0]", "id: value does not match"),
        ("pci", ["node=pve1,path=0000:01:00.0,id=10de:1eb8,colour=red"], "map[0]", "colour: not a key"),
        ("pci", [GPU, GPU], "map", "more than once"),
        # Mapping/Dir.pm assert_valid_map_list: "Node 'pve1' is specified 2 times."
        ("dir", ["node=pve1,path=/srv/a", "node=pve1,path=/srv/b"], "map", "is specified 2 times"),
        # Mapping/Dir.pm pve_verify_path.
        ("dir", ["node=pve1,path=srv/a"], "map[0]", "valid absolute path"),
        # qemu-server QemuServer/USB.pm: "More than one USB mapping per host not supported".
        ("usb", ["node=pve1,id=1050:0407", "node=pve1,id=1050:0408"], "map", "More than one USB mapping"),
        ("usb", ["node=pve1,id=1050:0407,path=usb1"], "map[0]", "path: value does not match"),
        ("usb", [], "map", "non-empty list"),
    ],
)
def test_bad_entries_are_refused_by_key(kind, entries, key, words):
    with pytest.raises(DeclarationError) as caught:
        mappings.SPECS[kind].declare("sid", "lab", name="m1", map=entries)
    assert any(problem.startswith(f"{key}") and words in problem for problem in caught.value.problems), (
        caught.value
    )


def test_an_option_of_another_kind_is_refused_by_name():
    # Mapping/USB.pm options: description and map only; mdev is PCI.pm's.
    with pytest.raises(DeclarationError, match="mdev: not an option of a usb mapping"):
        mappings.USB.declare("sid", "lab", name="key", map=["node=pve1,id=1050:0407"], mdev=True)


def test_dir_mappings_are_refused_before_pve_manager_8_3_6(monkeypatch):
    # pve-manager 8.3.6 "api: add resource map api endpoints for directories" (PVE 8.4); 8.3.5 has no
    # /cluster/mapping/dir (501 Method ... not implemented), so the refusal comes before the first read.
    decl = mappings.DIR.declare("sid", "lab", name="share", map=["node=pve1,path=/srv/share"])
    monkeypatch.setattr(mappings, "release", lambda ctx: Release("8.3", "8.3.5"))
    with pytest.raises(Refused, match=r"pve-manager 8\.3\.5, which has no directory mappings .*8\.3\.6"):
        mappings.DIR.on(None, decl)
    monkeypatch.setattr(mappings, "release", lambda ctx: Release("8.4", "8.4.1"))
    assert mappings.DIR.on(None, decl) is mappings.DIR
    monkeypatch.setattr(mappings, "release", lambda ctx: Release("9.0", "9.0.10"))
    assert mappings.DIR.on(None, decl) is mappings.DIR


def test_live_migration_capable_needs_pve_guest_common_5_1_7_on_pve_8(monkeypatch):
    # pve-guest-common 5.1.7 "mapping: pci: add 'live-migration-capable' flag to mappings".
    decl = _pci(**{"live-migration-capable": True})
    monkeypatch.setattr(mappings, "release", lambda ctx: Release("8.3", "8.3.2"))
    monkeypatch.setattr(mappings, "package_at_least", lambda ctx, p, v: (False, "pve1 runs it 5.1.6"))
    (refusal,) = mappings.PCI.refusals(None, decl, "create", None)
    assert refusal.startswith("live-migration-capable: pve1 runs it 5.1.6")
    monkeypatch.setattr(mappings, "release", lambda ctx: Release("9.0", "9.0.10"))
    assert mappings.PCI.refusals(None, decl, "create", None) == []


def test_a_destroy_is_refused_while_a_vm_names_the_mapping(monkeypatch):
    # API2/Cluster/Mapping/PCI.pm delete removes it without looking at guests; the VM then fails to start
    # (qemu-server QemuServer/PCI.pm: "PCI device mapping not found for 'gpu'").
    monkeypatch.setattr(mappings, "mapping_users", lambda ctx, kind, name: ["VM 300 hostpci0"])
    monkeypatch.setattr(mappings, "declared_users", lambda ctx, kind, name: [])
    decl = mappings.PCI.identify("sid", "lab", name="gpu")
    (refusal,) = mappings.PCI.refusals(None, decl, "delete", {})
    assert "VM 300 hostpci0 name it" in refusal and "PCI device mapping not found for '<id>'" in refusal
    monkeypatch.setattr(mappings, "mapping_users", lambda ctx, kind, name: [])
    assert mappings.PCI.refusals(None, decl, "delete", {}) == []


def test_which_mapping_a_device_key_names():
    # qemu-server pve-qm-hostpci / USB.pm (host the default key, mapping=<id>), Virtiofs.pm (dirid default).
    assert mappings.named_mapping("hostpci0", "mapping=gpu,pcie=1") == ("pci", "gpu")
    assert mappings.named_mapping("usb3", "mapping=key") == ("usb", "key")
    assert mappings.named_mapping("virtiofs0", "share,cache=always") == ("dir", "share")
    assert mappings.named_mapping("virtiofs1", "dirid=share") == ("dir", "share")
    assert mappings.named_mapping("hostpci0", "0000:01:00.0") is None
    assert mappings.named_mapping("net0", "mapping=gpu") is None


class _Client:
    def __init__(self, answer):
        self.answer, self.calls = answer, []

    def request(self, method, path, credential, **_):
        self.calls.append((method, path))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _vm_ctx(answer):
    ctx = SimpleNamespace(memo={}, target=SimpleNamespace(name="lab"), client=_Client(answer))
    ctx.broker = SimpleNamespace(read=lambda: "read-credential")
    return ctx


def test_a_vm_naming_a_mapping_without_an_entry_for_its_node_is_refused_at_plan():
    # PVE takes the config (API2/Qemu.pm check_hostpci_perm checks Mapping.Use only) and refuses the start
    # on a node the mapping does not map: find_on_current_node finds none.
    ctx = _vm_ctx({"type": "pci", "map": [GPU]})
    refusals, _ = mapping_use.guest_check(
        ctx, "qemu", 300, "pve2", None, {"hostpci0": "mapping=gpu", "memory": 2048}
    )
    (refusal,) = refusals
    assert refusal.startswith("hostpci0: pci mapping gpu has no entry for node pve2 (it maps pve1)")
    assert "PCI device mapping not found for 'gpu'" in refusal
    assert mapping_use.guest_check(ctx, "qemu", 300, "pve1", None, {"hostpci0": "mapping=gpu"}) == ([], [])
    # Containers take no mapping; nothing is read.
    assert mapping_use.guest_check(_vm_ctx(None), "lxc", 300, "pve2", None, {"hostpci0": "mapping=gpu"}) == (
        [],
        [],
    )


def test_a_vm_naming_a_missing_mapping_is_refused_unless_this_run_declares_it():
    absent = PveError("GET", "cluster/mapping/usb/key", 500, "mapping 'key' not found")
    ctx = _vm_ctx(absent)
    (refusal,), _ = mapping_use.guest_check(ctx, "qemu", 300, "pve1", None, {"usb0": "mapping=key"})
    assert refusal.startswith("usb0: usb mapping key does not exist and this run declares none")
    # A mapping state earlier in the run (its create, or the plan of it) counts, with its declared entries.
    remember(ctx, "mapping_usb", "key", {"map": ["node=pve1,id=1050:0407"]})
    assert mapping_use.guest_check(ctx, "qemu", 300, "pve1", None, {"usb0": "mapping=key"}) == ([], [])
    (refusal,), _ = mapping_use.guest_check(ctx, "qemu", 300, "pve2", None, {"usb0": "mapping=key"})
    assert "has no entry for node pve2" in refusal


def test_a_raw_host_device_s_root_only_refusal_names_the_mapping_that_works_with_a_token():
    # qemu-server API2/Qemu.pm check_hostpci_perm: "only root can set 'hostpci0' config for non-mapped
    # devices"; a mapping=<id> needs Mapping.Use on /mapping/pci/<id> (check_usb_perm likewise).
    why, _ = device_rule("hostpci0", "0000:01:00.0,pcie=1")
    assert "mapping=<id>" in why and "Mapping.Use on /mapping/pci/<id>" in why
    why, _ = device_rule("usb0", "host=1050:0407")
    assert "Mapping.Use on /mapping/usb/<id>" in why


def test_the_export_names_the_map_and_what_differs_from_pve_s_defaults():
    decl = mappings.PCI.identify("sid", "lab", name="gpu")
    live = mappings.PCI.parse(
        {"type": "pci", "map": [GPU], "mdev": 0, "description": "GPUs", "digest": "d"}, decl
    )
    assert mappings.PCI.export_values(live, decl) == {"map": live["map"], "description": "GPUs"}


def test_the_export_reads_no_dir_mappings_from_a_cluster_without_them(monkeypatch):
    # pve-manager before 8.3.6 has no /cluster/mapping/dir (501): the export lists none rather than failing.
    monkeypatch.setattr(mappings, "release", lambda ctx: Release("8.3", "8.3.5"))
    assert mappings.DIR.export_listings(None) == []
    assert [str(call) for call, _ in mappings.PCI.export_listings(None)] == ["GET cluster/mapping/pci"]
    monkeypatch.setattr(mappings, "release", lambda ctx: Release("9.0", "9.0.10"))
    assert [str(call) for call, _ in mappings.DIR.export_listings(None)] == ["GET cluster/mapping/dir"]
