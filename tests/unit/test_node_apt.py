"""A node's APT repositories (salt_proxmox/node/apt.py): declarations refused by name, PVE's answer read as
proxmox-apt gives it, and the writes each entry needs, from pve-manager API2/APT.pm over proxmox-apt."""

from __future__ import annotations

import pytest

from salt_proxmox.access import privileges
from salt_proxmox.errors import DeclarationError, Refused
from salt_proxmox.node import apt

LIST = "/etc/apt/sources.list"
ENTERPRISE = "/etc/apt/sources.list.d/pve-enterprise.list"


def _repo(uri: str, component: str, enabled: bool, suite: str = "bookworm") -> dict:
    return {"Types": ["deb"], "URIs": [uri], "Suites": [suite], "Components": [component], "Enabled": enabled}


def _answer(files: dict, status: dict, errors: dict | None = None) -> dict:
    return {
        "files": [{"path": path, "repositories": repos} for path, repos in files.items()],
        "errors": [{"path": p, "error": e} for p, e in (errors or {}).items()],
        "digest": "d1",
        "infos": [],
        "standard-repos": [{"handle": h, **({} if s is None else {"status": s})} for h, s in status.items()],
    }


def _declared(*entries: dict) -> apt.Declared:
    return apt.declare("s", "t", name="pve1", repositories=list(entries))


def test_the_standard_handles_follow_the_release():
    """proxmox-apt stable-bookworm standard_repositories: quincy, reef, squid on bookworm; master
    standard.rs CEPH_RELEASES: squid and tentacle on trixie."""
    assert "ceph-quincy-no-subscription" in apt.HANDLES[8] and "ceph-reef-test" in apt.HANDLES[8]
    assert (
        "ceph-quincy-no-subscription" not in apt.HANDLES[9] and "ceph-tentacle-enterprise" in apt.HANDLES[9]
    )
    assert {"enterprise", "no-subscription", "test"} <= set(apt.HANDLES[8]) & set(apt.HANDLES[9])


@pytest.mark.parametrize(
    ("entries", "named"),
    [
        ([{"handle": "pve-nosub"}], "repositories[0].handle"),
        ([{"handle": "test", "colour": "red"}], "colour"),
        ([{"path": "/tmp/x.list", "index": 0}], "repositories[0].path"),
        ([{"path": LIST, "index": -1}], "repositories[0].index"),
        ([{"path": LIST, "index": True}], "repositories[0].index"),
        ([{"handle": "test", "enabled": "maybe"}], "repositories[0].enabled"),
        ([{"handle": "test"}, {"handle": "test", "enabled": False}], "declared twice"),
        ([], "at least one"),
    ],
)
def test_bad_entries_are_refused_by_name(entries, named):
    with pytest.raises(DeclarationError, match=named.replace("[", r"\[").replace("]", r"\]")):
        _declared(*entries)


def test_the_recorded_form_declares_the_same_values():
    """The ownership row keeps ``{key: enabled}``; declared again before a destroy, it is the same."""
    decl = _declared({"handle": "no-subscription"}, {"path": ENTERPRISE, "index": 0, "enabled": False})
    again = apt.declare("s", "t", **decl.stored())
    assert again.values == decl.values == {"no-subscription": True, f"{ENTERPRISE}#0": False}
    with pytest.raises(DeclarationError, match="colour"):
        apt.declare("s", "t", name="pve1", colour="red")


def test_a_standard_repository_not_configured_reads_as_disabled_and_the_object_as_absent():
    """standard-repos: ``status`` is absent for a handle no file refers to (APT.pm ``optional => 1``)."""
    decl = _declared({"handle": "no-subscription"})
    data = _answer({ENTERPRISE: [_repo("https://enterprise.proxmox.com/debian/pve", "pve-enterprise", True)]},
                   {"enterprise": True, "no-subscription": None})  # fmt: skip
    assert apt.parse(data, decl) is None
    with_off = _declared({"handle": "no-subscription"}, {"path": ENTERPRISE, "index": 0, "enabled": False})
    live = apt.parse(data, with_off)
    assert live is not None and live["no-subscription"] is False and live[f"{ENTERPRISE}#0"] is True


def test_an_answer_without_its_digest_is_refused_never_read_as_empty():
    with pytest.raises(ValueError, match="digest"):
        apt.parse({"files": [], "errors": [], "standard-repos": []}, _declared({"handle": "test"}))


def test_on_pve8_a_disabled_pve_entry_is_enabled_where_it_is():
    """stable-bookworm add_repository_handle looks the entry up with product "pbs", so PUT would append
    a second pve-no-subscription line: the write is change_repository on the existing one."""
    data = _answer({LIST: [_repo("http://download.proxmox.com/debian/pve", "pve-no-subscription", False)]},
                   {"no-subscription": False})  # fmt: skip
    (call,) = apt.steps(_declared({"handle": "no-subscription"}), data, "bookworm")
    assert (call.method, dict(call.form)) == ("POST", {"path": LIST, "index": "0", "enabled": "1"})


def test_a_handle_not_configured_is_added_by_put():
    """add_repository: PUT handle writes the standard entry to its standard file."""
    (call,) = apt.steps(_declared({"handle": "test"}), _answer({}, {"test": None}), "trixie")
    assert (call.method, call.path, dict(call.form)) == (
        "PUT",
        "nodes/pve1/apt/repositories",
        {"handle": "test"},
    )


def test_the_legacy_uri_and_pvetest_component_refer_to_the_handle():
    """proxmox-apt: the URI without /pve (``has_legacy_uri``) and ``pvetest`` (bookworm's component) are
    the test repository too, so disabling it finds that entry."""
    data = _answer({LIST: [_repo("http://download.proxmox.com/debian/", "pvetest", True)]}, {"test": True})
    (call,) = apt.steps(_declared({"handle": "test", "enabled": False}), data, "bookworm")
    assert dict(call.form) == {"path": LIST, "index": "0", "enabled": "0"}


def test_an_entry_in_a_file_pve_cannot_parse_or_one_it_lacks_is_refused():
    """change_repository: ``unable to parse file``, ``invalid index``."""
    decl = _declared({"path": ENTERPRISE, "index": 0, "enabled": False})
    with pytest.raises(Refused, match="cannot parse"):
        apt.steps(decl, _answer({}, {}, errors={ENTERPRISE: "bad line"}), "bookworm")
    with pytest.raises(Refused, match="holds no entry 0"):
        apt.steps(decl, _answer({ENTERPRISE: []}, {}), "bookworm")


def test_destroy_disables_only_what_the_declaration_enabled():
    decl = _declared({"handle": "no-subscription"}, {"path": ENTERPRISE, "index": 0, "enabled": False})
    on = _repo("http://download.proxmox.com/debian/pve", "pve-no-subscription", True)
    off = _repo("https://enterprise.proxmox.com/debian/pve", "pve-enterprise", False)
    data = _answer({LIST: [on], ENTERPRISE: [off]}, {"no-subscription": True, "enterprise": False})
    (call,) = apt.steps(decl, data, "bookworm", destroy=True)
    assert dict(call.form) == {"path": LIST, "index": "0", "enabled": "0"}


def test_the_privileges_are_apt_pm_s():
    """APT.pm: repositories Sys.Audit, add_repository and change_repository Sys.Modify on /nodes/{node}."""
    decl = _declared({"handle": "test"})
    (read,) = privileges.simple_needs("apt_repository", "read", decl)
    (write,) = privileges.simple_needs("apt_repository", "update", decl)
    assert (read.path, read.privileges) == ("/nodes/pve1", ("Sys.Audit",))
    assert (write.path, write.privileges, write.credential) == ("/nodes/pve1", ("Sys.Modify",), "provision")
