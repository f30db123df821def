"""Snippets' pure half: the declaration (pve-storage ``Plugin.pm`` ``parse_volname``: ``snippets/([^/]+)``;
``get_subdir_files``: the glob ``<$path/*>`` skips dot files), the storage checks (``plugindata`` content,
``content``, ``disable``, ``nodes``: ``PVE/Storage.pm`` ``storage_check_enabled``; ``get_subdir`` and
``content-dirs``), the file on disk (absence proven, never assumed; an atomic write), the volids a guest's
``cicustom`` (qemu-server ``$cicustom_fmt``) and ``hookscript`` name, the guest check, and the formula's
entries. No server."""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

import pytest
import salt.state

from salt_proxmox.errors import DeclarationError
from salt_proxmox.pve.facts import parse_storages
from salt_proxmox.run.config import pillar_secrets
from salt_proxmox.simple.spec import remember
from salt_proxmox.snippet import disk, guard
from salt_proxmox.snippet.declare import SECRETS, declare, identify, read_source, snippet_volids
from salt_proxmox.snippet.lifecycle import _changes
from salt_proxmox.snippet.place import snippets_dir, storage_refusals
from tests.support.formula import formula


def _declare(**over):
    args = {"name": "user.yaml", "storage": "local", "content": "#cloud-config\n", **over}
    return declare("ud", "lab", **args)


def test_a_snippet_is_named_by_its_volid_and_compared_by_its_hash() -> None:
    snippet = _declare()
    assert snippet.volid == "local:snippets/user.yaml"
    assert snippet.key == "lab/snippet/local:snippets/user.yaml"
    assert snippet.sha256 == hashlib.sha256(b"#cloud-config\n").hexdigest() and snippet.size == 14
    assert snippet.mode == 0o644 and _declare(executable=True).mode == 0o755
    assert "cloud-config" not in repr(snippet) and "cloud-config" not in str(snippet.stored())


@pytest.mark.parametrize(
    ("over", "key"),
    [
        ({"name": "a/b.yaml"}, "name:"),  # parse_volname: snippets/([^/]+)
        ({"name": ".hidden"}, "name:"),  # get_subdir_files: <$path/*> never lists it
        ({"name": ""}, "name:"),
        ({"storage": "1bad"}, "storage:"),  # pve-storage-id
        ({"storage": None}, "storage:"),
        ({"content": 7}, "content:"),
        ({"content": None}, "content:"),
        ({"executable": "yes"}, "executable"),
        ({"adopt": 1}, "adopt"),
        ({"colour": "red"}, "colour"),
        ({"source": "salt://x"}, "source"),
    ],
)
def test_a_bad_declaration_is_refused_naming_the_key(over, key) -> None:
    with pytest.raises(DeclarationError) as caught:
        _declare(**over)
    assert any(key in problem for problem in caught.value.problems), caught.value.problems


def test_absent_takes_name_storage_and_removal_only() -> None:
    assert identify("ud", "lab", "user.yaml", "local").volid == "local:snippets/user.yaml"
    with pytest.raises(DeclarationError, match="content"):
        identify("ud", "lab", "user.yaml", "local", content="x")


def test_the_plan_shows_hashes_size_and_mode_never_content() -> None:
    snippet = _declare(content="secret: hunter2\n")
    created = _changes(snippet, None)
    assert set(created) == {"created", "sha256", "size", "mode"}
    assert "hunter2" not in str(created)
    same = disk.OnDisk(snippet.sha256, snippet.size, 0o644)
    assert _changes(snippet, same) == {}
    assert _changes(snippet, disk.OnDisk(snippet.sha256, snippet.size, 0o600)) == {
        "mode": {"old": "0o600", "new": "0o644"}
    }
    other = disk.OnDisk("0" * 64, snippet.size, 0o644)
    assert set(_changes(snippet, other)) == {"sha256"}


def _stores(**row):
    return parse_storages([{"storage": "s", "type": "dir", "path": "/srv/s", "content": "snippets", **row}])[
        "s"
    ]


@pytest.mark.parametrize(
    ("row", "needle"),
    [
        ({"type": "lvmthin", "path": ""}, "keeps no snippets"),  # LvmThinPlugin plugindata: images, rootdir
        ({"type": "zfspool"}, "keeps no snippets"),
        ({"content": "iso,backup"}, "does not include snippets"),
        ({"disable": 1}, "is disabled"),
        ({"nodes": "pve2,pve3"}, "is not available on node pve1"),  # storage_check_enabled
    ],
)
def test_a_storage_that_cannot_hold_the_snippet_is_refused(row, needle) -> None:
    refusals = storage_refusals("s", _stores(**row), "pve1")
    assert refusals and needle in " ".join(refusals)


def test_a_file_storage_taking_snippets_on_the_node_is_taken() -> None:
    assert storage_refusals("s", _stores(), "pve1") == []
    assert storage_refusals("s", _stores(nodes="pve1,pve2"), "pve1") == []
    assert storage_refusals("s", _stores(type="nfs", server="nas", export="/x"), "pve1") == []
    assert "not listed by GET /storage" in storage_refusals("s", None, "pve1")[0]


def test_the_snippets_directory_follows_content_dirs() -> None:
    """Plugin.pm get_subdir: $scfg->{'content-dirs'}->{$vtype} // 'snippets', under path."""
    assert snippets_dir("/var/lib/vz", "") == "/var/lib/vz/snippets"
    assert snippets_dir("/mnt/nas", "iso=isos,snippets=cloud/init") == "/mnt/nas/cloud/init"


def test_absence_is_proven_by_a_listable_directory_and_never_assumed(tmp_path) -> None:
    store = tmp_path / "store"
    directory = store / "snippets"
    # The storage's path is not there (an unmounted share): unknown, never absent.
    with pytest.raises(disk.SnippetUnreadable, match="does not exist or cannot be listed"):
        disk.read(str(store), str(directory), "user.yaml")
    store.mkdir()
    assert disk.read(str(store), str(directory), "user.yaml") is None  # path there, no snippets dir yet
    directory.write_text("not a directory")
    with pytest.raises(disk.SnippetUnreadable):
        disk.read(str(store), str(directory), "user.yaml")


def test_a_write_is_atomic_and_keeps_the_mode(tmp_path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    directory = store / "snippets"
    disk.write(str(directory), "hook.sh", b"#!/bin/sh\n", 0o755)
    found = disk.read(str(store), str(directory), "hook.sh")
    assert found == disk.OnDisk(hashlib.sha256(b"#!/bin/sh\n").hexdigest(), 10, 0o755)
    disk.write(str(directory), "hook.sh", b"#!/bin/sh\nexit 0\n", 0o755)
    assert [p.name for p in directory.iterdir()] == ["hook.sh"], "no temporary file is left"
    disk.remove(str(directory), "hook.sh")
    assert disk.read(str(store), str(directory), "hook.sh") is None


@pytest.mark.parametrize(
    ("key", "value", "volids"),
    [
        ("cicustom", "user=local:snippets/u.yaml,network=nas:snippets/n.yaml", ["local:snippets/u.yaml",
                                                                                "nas:snippets/n.yaml"]),
        ("cicustom", "meta=local:iso/x.iso", []),
        ("hookscript", "local:snippets/hook.sh", ["local:snippets/hook.sh"]),
        ("hookscript", None, []),
    ],
)  # fmt: skip
def test_the_snippets_a_guest_names(key, value, volids) -> None:
    assert snippet_volids(key, value) == volids


def _ctx():
    return SimpleNamespace(target=SimpleNamespace(name="lab"), memo={}, lane=None)


def test_a_guest_naming_a_snippet_of_this_run_is_checked_by_node_and_mode() -> None:
    """A storage that is not shared holds the file on the lane's node only; a hookscript must be
    executable (GuestHelpers.pm check_hookscript)."""
    ctx = _ctx()
    remember(ctx, "snippet", "local:snippets/u.yaml", {"node": "pve1", "shared": False, "mode": 0o644})
    assert guard.named(ctx, "qemu", 300, "pve1", None, "user=local:snippets/u.yaml") == ([], [])
    refused, _ = guard.named(ctx, "qemu", 300, "pve2", None, "user=local:snippets/u.yaml")
    assert "VM 300 runs on node pve2" in refused[0]
    refused, _ = guard.hookscript(ctx, "lxc", 120, "pve1", None, "local:snippets/u.yaml")
    assert "executable: true" in refused[0]
    remember(ctx, "snippet", "nas:snippets/u.yaml", {"node": "pve1", "shared": True, "mode": 0o755})
    assert guard.hookscript(ctx, "lxc", 120, "pve2", None, "nas:snippets/u.yaml") == ([], [])


def test_without_a_lane_a_snippet_not_of_this_run_is_noted_as_unchecked() -> None:
    refused, notes = guard.named(_ctx(), "qemu", 300, "pve1", None, "user=local:snippets/u.yaml")
    assert refused == [] and "was not checked" in notes[0]


def test_the_formula_declares_snippets_and_a_guest_requires_those_it_names() -> None:
    states = formula().estate(
        {
            "proxmox": {
                "snippets": {"local": {"u.yaml": {"content": "x"}, "old.sh": {"ensure": "absent"}}},
                "qemu": {"web": {"vmid": 300, "node": "pve1", "cicustom": "user=local:snippets/u.yaml"}},
            }
        }
    )
    # The content is no argument: the state reads it from its own pillar entry (secrets_pillar).
    assert states["proxmox-snippet-local-u.yaml"] == {
        "proxmox_snippet.present": [
            {"name": "u.yaml"},
            {"storage": "local"},
            {"secrets_pillar": ["proxmox", "snippets", "local", "u.yaml"]},
        ]
    }
    assert states["proxmox-snippet-local-old.sh"] == {
        "proxmox_snippet.absent": [{"name": "old.sh"}, {"storage": "local"}]
    }
    vm = states["proxmox-qemu-web"]["proxmox_qemu.present"]
    assert {"require": [{"proxmox_snippet": "proxmox-snippet-local-u.yaml"}]} in vm
    assert list(states).index("proxmox-snippet-local-u.yaml") < list(states).index("proxmox-qemu-web")


def test_a_source_is_read_and_rendered_by_salt_into_content() -> None:
    """The execution module reads salt:// files (cp.get_file_str) and renders them
    (file.apply_template_on_contents); the library gets text."""
    files = {"salt://p/u.yaml": "hostname: {{ name }}\n"}
    seen = []

    def render(text, template, context):
        seen.append((template, context))
        return text.replace("{{ name }}", context["name"])

    declared = {"source": "salt://p/u.yaml", "template": "jinja", "context": {"name": "web"}, "x": 1}
    found = read_source(declared, files.get, render)
    assert found == {"content": "hostname: web\n", "x": 1} and seen == [("jinja", {"name": "web"})]
    assert read_source({"content": "a"}, files.get, render) == {"content": "a"}


@pytest.mark.parametrize(
    ("declared", "key"),
    [
        ({"source": "salt://p/u.yaml", "content": "a"}, "content, source"),
        ({"source": "/etc/passwd"}, "source:"),
        ({"source": "salt://missing"}, "source:"),
        ({"template": "jinja", "content": "a"}, "template"),
        ({"source": "salt://p/u.yaml", "context": ["x"]}, "context:"),
    ],
)
def test_a_bad_source_is_refused_naming_the_key(declared, key) -> None:
    with pytest.raises(DeclarationError, match=key):
        read_source(declared, {"salt://p/u.yaml": "x"}.get, lambda text, template, context: text)


#: Cloud-init user data holding a password, as a snippet's content may.
USER_DATA = "#cloud-config\nchpasswd:\n  list: |\n    ops:snippet-Secret-9Qz\n"


def _lowstate(pillar: dict) -> list[dict]:
    """The lowstate Salt's compiler makes of the formula's highstate for ``pillar`` (salt/state.py
    ``Compiler.compile_high_data``): every chunk's arguments, which Salt keeps in ``highstate.cache.p``
    and hands every state as ``__lowstate__``."""
    high = {}
    for sid, body in formula().estate(pillar).items():
        ((function, arguments),) = body.items()
        module, _, fun = function.partition(".")
        high[sid] = {module: [fun, *arguments], "__sls__": "proxmox", "__env__": "base"}
    compiler = salt.state.Compiler({"state_auto_order": True}, {})
    compiled = compiler.compile_high_data(compiler.pad_funcs(high))
    # Salt 3008 returns (chunks, errors); 3006 and 3007 return the chunks alone.
    low, errors = compiled if isinstance(compiled, tuple) else (compiled, [])
    assert errors == []
    assert low, "the compiler made no chunk of the formula's highstate"
    return low


def test_a_snippets_content_is_in_no_chunk_of_the_lowstate_only_its_pillar_path() -> None:
    """Salt keeps a state's arguments in highstate.cache.p in its cachedir: the content (cloud-init user
    data may hold secrets) is read from pillar by the state (secrets_pillar), never an argument."""
    pillar = {
        "proxmox": {
            "snippets": {"local": {"u.yaml": {"content": USER_DATA}, "hook.sh": {"source": "salt://h.sh"}}},
            "qemu": {"web": {"vmid": 300, "node": "pve1", "cicustom": "user=local:snippets/u.yaml"}},
        }
    }
    low = _lowstate(pillar)
    assert USER_DATA not in repr(low) and "snippet-Secret" not in repr(low)
    (chunk,) = [c for c in low if c["__id__"] == "proxmox-snippet-local-u.yaml"]
    assert "content" not in chunk
    assert chunk["secrets_pillar"] == ["proxmox", "snippets", "local", "u.yaml"]
    # The path the state reads names the entry holding the content (run.config.pillar_secrets).
    entry = pillar["proxmox"]["snippets"]["local"]["u.yaml"]
    found = pillar_secrets(SECRETS, {"__low__": chunk}, chunk["secrets_pillar"], lambda path: entry)
    assert found == {"content": USER_DATA}
    # A source stays an argument: it names a salt:// file, which the execution module reads.
    (hook,) = [c for c in low if c["__id__"] == "proxmox-snippet-local-hook.sh"]
    assert hook["source"] == "salt://h.sh" and "secrets_pillar" not in hook


def test_content_given_as_a_state_argument_is_refused_naming_secrets_pillar() -> None:
    """A hand-written state passing content itself would leave it in Salt's cache: refused by name."""
    with pytest.raises(
        DeclarationError, match=r"content: a secret is never a state argument.*secrets_pillar"
    ):
        pillar_secrets(SECRETS, {"__low__": {"content": USER_DATA}, "content": USER_DATA}, None, dict().get)


def test_the_formula_reads_the_snippets_secrets_the_library_names() -> None:
    # The formula cannot import salt_proxmox (synced from file_roots): its copy is pinned here.
    assert set(formula().SNIPPET_SECRETS) == set(SECRETS) == {"content"}
