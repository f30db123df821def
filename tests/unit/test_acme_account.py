"""Pure rules of ACME accounts (salt_proxmox.datacenter.acme_account) and the simple lifecycle's root lane
(``ObjectSpec.reads_with``/``writes_with``: ``root_lane``), each beside its source: pve-manager
``PVE/API2/ACMEAccount.pm``, ``PVE/CertHelpers.pm``, ``PVE/NodeConfig.pm``, ``PVE/CLI/pvenode.pm``,
pve-access-control ``PVE/RPCEnvironment.pm`` ``check_api2_permissions``, pve-common ``JSONSchema.pm``."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from salt_proxmox.datacenter import acme_account as acct
from salt_proxmox.errors import DeclarationError, Refused
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.errors import PVE_WORDS, PveError
from salt_proxmox.pve.lane import LaneConfig, PveshLane
from salt_proxmox.pve.tasks import TaskUncertain
from salt_proxmox.simple import lifecycle
from salt_proxmox.simple.spec import Call

HMAC = "c2VjcmV0LWhtYWMta2V5"
TOS = "https://ca.example/tos.pdf"
UPID = "UPID:pve1:0000A1B2:0001C3D4:6650F00D:acmeregister:lab:root@pam:"


def _declare(**options):
    return acct.declare("sid", "lab", **{"name": "lab", "contact": ["ops@lab.example"], **options})


class _Lane:
    """A root lane: answers by path, and the calls made (method, path, form, secrets)."""

    label = "pvesh on pve1"
    words = PVE_WORDS
    carries_secrets = False

    def __init__(self, answers=None):
        self.answers, self.calls = answers or {}, []

    def request(self, method, path, credential=None, params=None, form=None, secrets=()):
        self.calls.append((method, path, dict(form or {}), tuple(secrets)))
        return self.answers.get(path)


class _Reads:
    def __init__(self, client):
        self.client = client

    def shared(self, client, path, credential, params=None):
        return client.request("GET", path, credential)

    def drop_listings(self):
        return None


class _Client:
    def __init__(self, answers):
        self.answers, self.calls = answers, []

    def request(self, method, path, credential, params=None, form=None, **_):
        self.calls.append((method, path))
        return self.answers[path]


def _ctx(lane=None, answers=None):
    client = _Client(answers or {})
    memo = {"salt_proxmox.root_lane/lab": ("pvesh on pve1", [])}
    return SimpleNamespace(
        memo=memo,
        target=SimpleNamespace(name="lab"),
        client=client,
        lane=lane,
        reads=_Reads(client),
        broker=SimpleNamespace(read=lambda: "read-token"),
        sleep=None,
        task_polls=3,
        poll_interval=0.0,
    )


def test_contact_is_a_set_of_addresses_sent_comma_separated_and_read_from_mailto_uris():
    # ACMEAccount.pm $account_contact_from_param: split_list, then "mailto:$_" each.
    decl = _declare(contact=["pki@lab.example", "ops@lab.example", "ops@lab.example"])
    assert decl.values["contact"] == ["ops@lab.example", "pki@lab.example"]
    assert acct.create(decl).form["contact"] == "ops@lab.example,pki@lab.example"
    assert _declare(contact="pki@lab.example; ops@lab.example").values == decl.values
    live = acct.parse(
        {"account": {"contact": ["mailto:pki@lab.example", "mailto:ops@lab.example"]}, "directory": "x"}, decl
    )
    assert live["contact"] == decl.values["contact"]
    assert acct.update(decl, live) is None
    # update_account takes contact only: a change is one PUT of it.
    changed = acct.update(_declare(contact=["ops@lab.example"]), live)
    assert changed == Call("PUT", "cluster/acme/account/lab", form={"contact": "ops@lab.example"})


@pytest.mark.parametrize(
    ("options", "key", "words"),
    [
        ({"name": "1st"}, "name", "pve-configid"),
        ({"contact": ["not-an-address"]}, "contact", "valid email address"),
        ({"contact": ["mailto:ops@lab.example"]}, "contact", "valid email address"),
        ({"contact": []}, "contact", "register_account requires contact"),
        ({"directory": "ftp://ca.example/dir"}, "directory", "pve-acme-directory-url"),
        ({"eab-kid": "kid-1"}, "eab-kid", "requires eab-hmac-key"),
        ({"eab-hmac-key": HMAC}, "eab-hmac-key", "requires eab-kid"),
        ({"colour": "red"}, "colour", "unknown key"),
    ],
)
def test_bad_declarations_are_refused_by_key(options, key, words):
    with pytest.raises(DeclarationError) as caught:
        _declare(**options)
    text = str(caught.value)
    assert text.startswith(f"{key}:") or f"; {key}:" in text or f"\n{key}:" in text, text
    assert words in text
    assert HMAC not in text


def test_the_directory_defaults_to_let_s_encrypt_v2_and_the_eab_pair_is_sent_at_register_only():
    # ACMEAccount.pm register_account: directory default $acme_default_directory_url.
    decl = _declare(tos_url=TOS, **{"eab-kid": "kid-1", "eab-hmac-key": HMAC})
    assert decl.values["directory"] == acct.DEFAULT_DIRECTORY
    form = acct.create(decl).form
    assert (form["eab-kid"], form["eab-hmac-key"], form["tos_url"]) == ("kid-1", HMAC, TOS)
    # Never compared, stored or shown: no read shows them.
    assert "eab-hmac-key" not in decl.values and HMAC not in repr(decl) and HMAC not in str(decl.stored())
    saved = {
        "account": {"contact": ["mailto:ops@lab.example"]},
        "directory": acct.DEFAULT_DIRECTORY,
        "tos": TOS,
    }
    live = acct.parse(saved, decl)
    assert acct.SPEC.differences(live, decl) == {}
    exported = {"contact": ["ops@lab.example"], "directory": acct.DEFAULT_DIRECTORY, "tos_url": TOS}
    assert acct.export_values(live, decl) == exported


def test_absence_is_pve_s_exact_parameter_error():
    decl = _declare()
    # get_account: raise_param_exc({name => "ACME account config file '<name>' does not exist."}).
    missing = PveError("GET", "p", 400, "Parameter verification failed.",
                       {"name": "ACME account config file 'lab' does not exist."})  # fmt: skip
    assert acct.SPEC.is_absent(missing, decl)
    other = PveError("GET", "p", 400, "Parameter verification failed.", {"name": "something else"})
    assert not acct.SPEC.is_absent(other, decl)
    # check_api2_permissions: raise_perm_exc('user != root@pam') is never absence.
    assert not acct.SPEC.is_absent(
        PveError("GET", "p", 403, "Permission check failed (user != root@pam)"), decl
    )
    with pytest.raises(ValueError):
        acct.parse({"directory": acct.DEFAULT_DIRECTORY}, decl)


def test_without_a_lane_every_write_is_refused_naming_the_lane_and_the_command():
    # Every account method but the index has no permissions: root@pam only (check_api2_permissions).
    ctx, decl = _ctx(), _declare(tos_url=TOS)
    for action, command in (
        ("create", "`pvesh create /cluster/acme/account --name lab --contact ops@lab.example --directory "),
        ("update", "`pvesh set /cluster/acme/account/lab --contact ops@lab.example`"),
        ("delete", "`pvesh delete /cluster/acme/account/lab`"),
    ):
        (said,) = acct.refusals(ctx, decl, action, None)
        assert "proxmox:targets:lab:root_lane: pvesh" in said and command in said
        assert "user != root@pam" in said
    eab = _declare(**{"eab-kid": "kid-1", "eab-hmac-key": HMAC})
    (said,) = acct.refusals(ctx, eab, "create", None)
    assert "pvenode acme account register lab" in said and HMAC not in said


def test_through_a_pvesh_lane_an_eab_account_is_refused_and_the_ca_s_terms_are_required():
    lane = _Lane({"cluster/acme/meta": {"termsOfService": TOS}})
    ctx = _ctx(lane)
    # PveshLane: a secret never goes through pvesh's argv (SecretInLane); the plan refuses it first.
    eab = _declare(tos_url=TOS, **{"eab-kid": "kid-1", "eab-hmac-key": HMAC})
    (said,) = acct.refusals(ctx, eab, "create", None)
    assert "pvesh's argv" in said and "pvenode.pm acme_register" in said and HMAC not in said
    assert "root_lane: {via: ticket" in said
    # The ticket lane sends the key in its HTTPS form: no refusal of it.
    lane.carries_secrets = True
    assert acct.refusals(ctx, eab, "create", None) == []
    lane.carries_secrets = False
    # get_meta termsOfService: registering agrees to them (register_account tos_url).
    (said,) = acct.refusals(ctx, _declare(), "create", None)
    assert f"declare tos_url: {TOS} to agree" in said
    assert acct.refusals(ctx, _declare(tos_url=TOS), "create", None) == []
    assert lane.calls[-1][:2] == ("GET", "cluster/acme/meta")
    # externalAccountRequired: the CA refuses a register without the EAB pair.
    lane.answers["cluster/acme/meta"] = {"externalAccountRequired": 1}
    (said,) = acct.refusals(ctx, _declare(), "create", None)
    assert "requires External Account Binding" in said


def test_the_directory_and_the_agreement_are_fixed_once_registered():
    # update_account takes contact only.
    ctx, decl = _ctx(_Lane()), _declare(tos_url=TOS)
    live = {"contact": ["ops@lab.example"], "directory": "https://other.example/dir", "tos_url": "old"}
    said = acct.refusals(ctx, decl, "update", live)
    assert [s.split(":")[1].split()[0] for s in said] == ["directory", "tos_url"]
    assert all("register another under a new name" in s for s in said)


@pytest.mark.parametrize(
    ("config", "uses"),
    [
        ({"acme": "account=lab,domains=pve2.lab.example"}, True),
        ({"acme": "account=other,domains=pve2.lab.example"}, False),
        ({"acmedomain0": "pve2.lab.example,plugin=dns1"}, False),
        ({}, False),
    ],
)
def test_an_account_a_node_uses_is_never_deactivated(config, uses):
    answers = {"nodes": [{"node": "pve2"}], "nodes/pve2/config": config}
    refused = acct.refusals(_ctx(_Lane(), answers), _declare(), "delete", {})
    assert bool(refused) is uses
    if uses:
        assert "pve2: acme (account=lab)" in refused[0]


def test_a_node_with_domains_and_no_account_uses_default():
    # NodeConfig.pm get_acme_conf: $res->{account} //= 'default'.
    answers = {"nodes": [{"node": "pve2"}], "nodes/pve2/config": {"acmedomain0": "pve2.lab.example"}}
    assert acct.users(_ctx(_Lane(), answers), "default") == ["pve2: acme (account=default)"]
    assert acct.users(_ctx(_Lane(), {**answers, "nodes/pve2/config": {}}), "default") == []


def test_a_deactivate_is_said_irreversible():
    (said,) = acct.side_effects(_ctx(_Lane()), _declare(), "delete")
    assert "irreversible" in said and "_deactivated_lab_<n>" in said


def test_without_a_lane_the_index_proves_absence_and_a_listed_account_is_refused():
    # account_index: permissions => { user => 'all' }, names only.
    ctx = _ctx(answers={"cluster/acme/account": [{"name": "other"}]})
    assert acct.for_cluster(ctx, _declare()) is acct.INDEXED
    assert acct.INDEXED.reader(ctx) == (ctx.client, "read-token")
    assert acct.INDEXED.parse([{"name": "other"}], _declare()) is None
    with pytest.raises(ValueError):
        acct.INDEXED.parse([{"name": "lab"}], _declare())
    listed = _ctx(answers={"cluster/acme/account": [{"name": "lab"}]})
    with pytest.raises(Refused) as caught:
        acct.for_cluster(listed, _declare())
    assert "root_lane" in str(caught.value)


def test_a_lane_whose_preconditions_fail_reads_nothing():
    ctx = _ctx(_Lane())
    ctx.memo["salt_proxmox.root_lane/lab"] = (
        "pvesh",
        ["proxmox:targets:lab:root_lane: pvesh is not on the PATH"],
    )
    with pytest.raises(Refused) as caught:
        acct.for_cluster(ctx, _declare())
    assert "pvesh is not on the PATH" in str(caught.value)
    assert ctx.lane.calls == []


def test_a_root_lane_family_reads_through_the_lane_without_a_credential():
    ctx = _ctx(_Lane())
    assert acct.SPEC.reader(ctx) == (ctx.lane, None)
    with pytest.raises(Refused):
        acct.SPEC.reader(_ctx())


def test_a_root_lane_write_names_its_secrets_to_the_lane_and_awaits_its_task_through_it():
    status = f"{api_path('nodes', 'pve1', 'tasks', UPID)}/status"
    lane = _Lane({"cluster/acme/account": UPID, status: {"status": "stopped", "exitstatus": "OK"}})
    ctx = _ctx(lane)
    decl = _declare(tos_url=TOS, **{"eab-kid": "kid-1", "eab-hmac-key": HMAC})
    lifecycle.lane_write(ctx, acct.SPEC, decl, acct.create(decl), "create ACME account lab")
    (post, poll) = lane.calls
    # PveshLane.request refuses a form holding a named secret (SecretInLane): the key is named to it.
    assert post[:2] == ("POST", "cluster/acme/account") and set(post[3]) == {"eab-kid", "eab-hmac-key"}
    assert poll[:2] == ("GET", status)
    # fork_worker: each write is a task; no UPID is no confirmation.
    lane.answers["cluster/acme/account"] = None
    with pytest.raises(TaskUncertain):
        lifecycle.lane_write(ctx, acct.SPEC, decl, acct.create(decl), "create ACME account lab")


def test_a_pvesh_lane_names_its_task_log_command_as_pve_does():
    # pve.tasks.await_task names the log command from the client's words: the lane's are PVE's.
    assert PveshLane(LaneConfig("pvesh")).words.task_log.format(node="pve1", upid="U")
