"""A container's raw ``lxc.*`` lines (salt_proxmox.lxc.rawkeys): declared as PVE's parser takes them,
judged as an ordered list, and written into the node's config file under PVE's config lock with every
other line kept byte for byte (pve-container ``src/PVE/LXC/Config.pm`` ``parse_pct_config``,
``write_pct_config``, ``is_valid_lxc_conf_key``; pve-guest-common ``AbstractConfig.pm``
``lock_config``/``check_lock``; pve-common ``PVE/Tools.pm`` ``lock_file_full``)."""

from __future__ import annotations

import fcntl
import hashlib
import os

import pytest

from salt_proxmox.errors import DeclarationError, Refused
from salt_proxmox.lxc import rawkeys
from salt_proxmox.lxc.judge import create_form, create_root, judge
from salt_proxmox.lxc.props import parse_declaration

GPU = [["lxc.cgroup2.devices.allow", "c 226:0 rwm"], ["lxc.cgroup2.devices.allow", "c 226:128 rwm"]]
GPU_TEXT = "lxc.cgroup2.devices.allow: c 226:0 rwm\nlxc.cgroup2.devices.allow: c 226:128 rwm"
#: A config file as write_pct_config writes it: notes, keys sorted, raw lines, then a snapshot.
FILE = (
    "#GPU box\n"
    "arch: amd64\n"
    "hostname: gpu\n"
    "memory: 2048\n"
    "rootfs: local-lvm:vm-100-disk-0,size=8G\n"
    "unprivileged: 1\n"
    "lxc.cgroup2.devices.allow: c 195:* rwm\n"
    "lxc.environment.runtime: FOO=bar\n"
    "\n"
    "[before]\n"
    "hostname: gpu\n"
    "lxc.cgroup2.devices.allow: c 1:1 rwm\n"
)


def decl(**config: object):
    return parse_declaration("gpu", vmid=100, node="pve1", target="lab", config=config)


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()  # noqa: S324 - PVE's digest


@pytest.mark.parametrize(
    ("key", "needle"),
    [
        ("lxc.rootfs.path", "lxc.rootfs.path is auto generated from rootfs"),
        ("lxc.rootfs.options", "lxc.rootfs.options is not supported"),
        ("lxc.environment.runtime", "declare env instead"),
        ("lxc.bogus.key", "is not a key pve-container accepts"),
        ("cgroup2.devices.allow", "is not an lxc.* key"),
    ],
)
def test_a_key_pve_s_parser_refuses_is_refused_by_index(key: str, needle: str) -> None:
    # is_valid_lxc_conf_key: the named keys, lxc.cgroup2.*, lxc.prlimit.*, lxc.net.*; else "unable to parse".
    with pytest.raises(DeclarationError) as caught:
        decl(lxc=[["lxc.mount.entry", "/dev/dri dev/dri none bind,optional,create=dir"], [key, "x"]])
    assert any(p.startswith("lxc[1]: ") and needle in p for p in caught.value.problems), caught.value.problems


@pytest.mark.parametrize(
    "key", ["lxc.cgroup2.devices.allow", "lxc.prlimit.nofile", "lxc.net.0.type", "lxc.idmap"]
)
def test_keys_pve_takes_are_taken(key: str) -> None:
    assert decl(lxc=[[key, "v"]]).config["lxc"] == f"{key}: v"


def test_a_value_with_a_line_break_is_refused() -> None:
    # write_pct_config: die "detected invalid newline inside property".
    with pytest.raises(DeclarationError, match=r"lxc\[0\]: a value holds no line break"):
        decl(lxc=[["lxc.mount.entry", "a\nlxc.include: /etc/shadow"]])


def test_the_lines_are_an_ordered_list_so_another_order_is_a_change() -> None:
    # parse_pct_config keeps the file's order, and LXC applies devices.deny/allow in order.
    live = {"digest": "0" * 40, "unprivileged": 1, "lxc": list(reversed(GPU))}
    change = judge(decl(lxc=GPU), live)
    assert change.drift == ["lxc"] and change.put == {"lxc": GPU_TEXT} and list(change.root) == ["lxc"]
    assert "(the same lines in another order)" in change.root["lxc"]
    assert judge(decl(lxc=GPU), {**live, "lxc": GPU}).drift == []


def test_a_change_names_the_lines_added_and_removed_and_the_file() -> None:
    live = {"digest": "0" * 40, "lxc": [["lxc.cgroup2.devices.allow", "c 195:* rwm"]]}
    sentence = judge(decl(lxc=GPU), live).root["lxc"]
    assert "- lxc.cgroup2.devices.allow: c 195:* rwm" in sentence
    assert "+ lxc.cgroup2.devices.allow: c 226:0 rwm" in sentence
    assert "/etc/pve/nodes/pve1/lxc/100.conf" in sentence


def test_an_empty_list_removes_every_raw_line_and_none_declared_leaves_them() -> None:
    live = {"digest": "0" * 40, "lxc": GPU}
    assert judge(decl(lxc=[]), live).clear == ["lxc"]
    assert judge(decl(memory=512), {**live, "memory": 512}).drift == []


def test_at_create_the_lines_are_the_lane_s_and_never_in_the_token_s_form() -> None:
    made = decl(lxc=GPU, ostemplate="local:vztmpl/x.tar.zst", rootfs="local-lvm:8")
    assert "only root on node pve1 may edit" in create_root(made)["lxc"]
    assert "lxc" not in create_form(made)


def test_the_rewrite_keeps_every_other_line_byte_for_byte() -> None:
    new = rawkeys.replace_lines(FILE, GPU_TEXT)
    assert new == FILE.replace("lxc.cgroup2.devices.allow: c 195:* rwm\n", GPU_TEXT + "\n", 1)
    # The env line (lxc.environment.runtime is env's) and the snapshot's own raw line stay.
    assert "lxc.environment.runtime: FOO=bar\n" in new and "c 1:1 rwm" in new


def test_lines_added_to_a_file_without_any_go_at_the_end_of_the_main_section() -> None:
    raw = "arch: amd64\nhostname: a\n\n[snap]\nhostname: a\n"
    assert (
        rawkeys.replace_lines(raw, GPU_TEXT)
        == f"arch: amd64\nhostname: a\n{GPU_TEXT}\n\n[snap]\nhostname: a\n"
    )
    assert rawkeys.replace_lines(rawkeys.replace_lines(raw, GPU_TEXT), "") == raw


def _tree(tmp_path, text: str = FILE):
    pve, lock = tmp_path / "etc" / "pve", tmp_path / "run" / "lock"
    path = pve / "nodes" / "pve1" / "lxc" / "100.conf"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return str(pve), str(lock), path


def test_the_write_replaces_the_lines_under_the_lock_guarded_by_the_file_s_digest(tmp_path) -> None:
    pve, lock, path = _tree(tmp_path)
    rawkeys.write_lines(pve, lock, "pve1", 100, GPU_TEXT, sha1(FILE))
    assert path.read_text() == rawkeys.replace_lines(FILE, GPU_TEXT)
    assert os.path.exists(rawkeys.lock_path(lock, 100))
    assert not [p for p in os.listdir(path.parent) if ".tmp." in p]


def test_a_file_changed_since_it_was_judged_is_never_written(tmp_path) -> None:
    # The digest PVE answers is sha1_hex of the raw file (parse_pct_config): another writer changed it.
    pve, lock, path = _tree(tmp_path)
    with pytest.raises(Refused, match="changed since it was judged"):
        rawkeys.write_lines(pve, lock, "pve1", 100, GPU_TEXT, sha1(FILE + "memory: 1\n"))
    assert path.read_text() == FILE


def test_a_locked_config_is_never_written(tmp_path) -> None:
    # AbstractConfig.pm check_lock: die "CT is locked (backup)".
    text = FILE.replace("memory: 2048\n", "lock: backup\nmemory: 2048\n")
    pve, lock, path = _tree(tmp_path, text)
    with pytest.raises(Refused, match=r"is locked \(backup\)"):
        rawkeys.write_lines(pve, lock, "pve1", 100, GPU_TEXT, sha1(text))
    assert path.read_text() == text


def test_nothing_is_written_while_another_holds_the_config_lock(tmp_path) -> None:
    # lock_file_full: flock(LOCK_EX) within the timeout, else "can't lock file ... got timeout".
    pve, lock, path = _tree(tmp_path)
    os.makedirs(os.path.dirname(rawkeys.lock_path(lock, 100)))
    with open(rawkeys.lock_path(lock, 100), "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(Refused, match=r"can't lock file .*pve-config-100\.lock' - got timeout"):
            rawkeys.write_lines(pve, lock, "pve1", 100, GPU_TEXT, sha1(FILE), timeout=0.3)
    assert path.read_text() == FILE


def test_a_locked_config_s_raw_lines_are_refused_at_plan() -> None:
    # AbstractConfig.pm check_lock (update_vm and pct set alike): no change to a locked config.
    change = judge(decl(lxc=GPU), {"digest": "0" * 40, "lock": "backup"})
    assert change.root == {} and change.put == {}
    assert "is locked (backup)" in change.refuse[0]
