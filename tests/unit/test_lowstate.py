"""The run's declarations (Salt's ``__lowstate__``): chunks per state module and target, and the refusal
of two declarations of one object, keyed as each family keys its ownership rows (docs/design.md §8)."""

from __future__ import annotations

from functools import partial

import pytest

from salt_proxmox.firewall import alias
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.lxc.family import LXC as CONTAINERS
from salt_proxmox.openbao_policy import lifecycle as policies
from salt_proxmox.run.config import default_target
from salt_proxmox.run.lowstate import Chunk, Run, twins_refusal
from salt_proxmox.simple import acl, pool, role
from salt_proxmox.simple.lifecycle import chunk_keys


def low(state_id: str, state: str, fun: str = "present", **args) -> dict:
    """A chunk as Salt 3008 builds it (``salt/state.py`` ``compile_high_data``)."""
    return {
        "__id__": state_id,
        "name": args.pop("name", state_id),
        "state": state,
        "fun": fun,
        "__sls__": "proxmox",
        "__env__": "base",
        "order": 10000,
        **args,
    }


def refusal(chunks: list[dict], current: dict, states, keys_of) -> str | None:
    return twins_refusal(Run(chunks, current), states, keys_of)


LXC = partial(guest_lifecycle.chunk_keys, CONTAINERS, default_target="homelab")


def test_no_run_outside_a_state_run():
    assert Run.of({}) is None
    assert Run.of({"__lowstate__": None, "__low__": None}) is None
    assert Run.of({"__lowstate__": "text"}) is None
    assert twins_refusal(None, ("proxmox_lxc",), LXC) is None


def test_chunk_keeps_the_state_arguments_only():
    chunk = Chunk.of(low("web", "proxmox_lxc", vmid=150, node="pve1", require=[{"pkg": "x"}]))
    assert (chunk.state_id, chunk.name, chunk.state, chunk.fun) == ("web", "web", "proxmox_lxc", "present")
    assert dict(chunk.args) == {"vmid": 150, "node": "pve1", "require": [{"pkg": "x"}]}
    assert Chunk.of({"__id__": "x"}) is None, "no state/fun: not a state chunk"


def test_declared_per_state_module_and_target():
    chunks = [
        low("a", "proxmox_lxc", vmid=150, node="pve1"),
        low("b", "proxmox_lxc", vmid=151, node="pve1", target="lab"),
        low("p", "proxmox_pool"),
        low("c", "proxmox_lxc", vmid=152, node="pve1", target="homelab"),
    ]
    run = Run(chunks)
    assert [c.state_id for c in run.declared("proxmox_lxc")] == ["a", "b", "c"]
    assert [c.state_id for c in run.declared("proxmox_lxc", "homelab", default="homelab")] == ["a", "c"]
    assert [c.state_id for c in run.declared("proxmox_lxc", "lab", default="homelab")] == ["b"]
    assert [c.state_id for c in run.declared("proxmox_lxc", "homelab")] == ["c"], (
        "with several targets configured a chunk naming none is on none"
    )


def test_default_target_only_when_one_is_configured():
    assert default_target({"homelab": {}}) == "homelab"
    assert default_target({"a": {}, "b": {}}) is None
    assert default_target(None) is None


def test_two_states_one_vmid_are_both_refused_naming_each_other():
    # vmids are cluster-wide (pve-cluster keeps one vmlist for every node), so another node is no
    # other guest; "150" and 150 are one vmid; present and absent of one guest contradict.
    a = low("web", "proxmox_lxc", vmid=150, node="pve1")
    b = low("web-copy", "proxmox_lxc", vmid="150", node="pve2", target="homelab")
    c = low("old-web", "proxmox_lxc", "absent", vmid=150, node="pve1")
    other = low("db", "proxmox_lxc", vmid=151, node="pve1")
    chunks = [a, b, c, other]
    first = refusal(chunks, a, ("proxmox_lxc",), LXC)
    assert "lxc 150 on homelab" in first
    assert "state web (proxmox_lxc.present)" in first
    assert "state web-copy (proxmox_lxc.present)" in first and "state old-web (proxmox_lxc.absent)" in first
    second = refusal(chunks, b, ("proxmox_lxc",), LXC)
    assert "state web (proxmox_lxc.present)" in second and "state web-copy" in second
    assert refusal(chunks, other, ("proxmox_lxc",), LXC) is None


def test_same_vmid_on_another_target_is_another_guest():
    a = low("web", "proxmox_lxc", vmid=150, node="pve1")
    b = low("lab-web", "proxmox_lxc", vmid=150, node="pve1", target="lab")
    assert refusal([a, b], a, ("proxmox_lxc",), LXC) is None


def test_an_unreadable_declaration_is_left_to_its_own_refusal():
    a = low("web", "proxmox_lxc", vmid=150, node="pve1")
    bad = low("bad", "proxmox_lxc", vmid="15x", node="pve1")
    assert refusal([a, bad], a, ("proxmox_lxc",), LXC) is None
    assert refusal([a, bad], bad, ("proxmox_lxc",), LXC) is None


def test_names_from_salt_names_are_told_apart():
    chunks = [low("pools", "proxmox_pool", name="prod"), low("pools", "proxmox_pool", name="lab")]
    keys_of = partial(chunk_keys, pool.SPEC, default_target="homelab")
    assert refusal(chunks, chunks[0], ("proxmox_pool",), keys_of) is None
    chunks.append(low("more", "proxmox_pool", name="prod"))
    found = refusal(chunks, chunks[0], ("proxmox_pool",), keys_of)
    assert "state pools (name prod) (proxmox_pool.present)" in found and "state more (name prod)" in found


@pytest.mark.parametrize(
    ("spec", "state", "first", "second", "one"),
    [
        # pve-firewall src/PVE/Firewall.pm parse_alias/aliases keyed by lc($name)
        (alias.SPEC, "proxmox_firewall_alias", {"name": "Web"}, {"name": "web"}, True),
        # pve-access-control src/PVE/API2/Pool.pm create_pool and src/PVE/API2/Role.pm create_role
        # look ids up as written ($usercfg->{pools}->{$pool}, ->{roles}->{$role}): two spellings are
        # two pools, two roles
        (pool.SPEC, "proxmox_pool", {"name": "Prod"}, {"name": "prod"}, False),
        (role.SPEC, "proxmox_role", {"name": "Ops"}, {"name": "ops"}, False),
        # one ACL entry is (path, ugid, role); pve-access-control normalize_path drops a trailing /
        (
            acl.SPEC,
            "proxmox_acl",
            {"path": "/vms/", "role": "R", "token": "a@pve!tk"},
            {"path": "/vms", "role": "R", "token": "a@pve!tk", "propagate": False},
            True,
        ),
        (
            acl.SPEC,
            "proxmox_acl",
            {"path": "/vms", "role": "R", "token": "a@pve!tk"},
            {"path": "/vms", "role": "R", "user": "a@pve"},
            False,
        ),
    ],
)
def test_simple_objects_are_keyed_as_pve_keys_them(spec, state, first, second, one):
    a = low("first", state, **first)
    b = low("second", state, "absent", **second)
    keys_of = partial(chunk_keys, spec, default_target="homelab")
    found = refusal([a, b], a, (state,), keys_of)
    assert (found is not None) is one, found
    if one:
        assert "state first" in found and "state second" in found


def test_openbao_policy_names_are_case_folded():
    # OpenBao lower-cases policy names (vault/policy_store.go sanitizePolicyName)
    a = low("creds", "openbao_policy", name="Salt-Creds", fragments=["x"])
    b = low("creds-too", "openbao_policy", "absent", name="salt-creds")
    found = refusal([a, b], a, (policies.STATE,), policies.chunk_keys)
    assert "policy salt-creds on openbao" in found and "state creds-too (name salt-creds)" in found


def test_a_rename_declares_the_old_object_too():
    # A rename deletes the old alias/policy after writing the new one, so another state declaring the
    # old name would fight it (firewall lifecycle _rename, openbao_policy lifecycle present).
    keys_of = partial(chunk_keys, alias.SPEC, default_target="homelab")
    renamed = low(
        "web-servers",
        "proxmox_firewall_alias",
        name="web_servers",
        rename_from="Web_Hosts",
        cidr="10.0.0.0/24",
    )
    old = low("web-hosts", "proxmox_firewall_alias", name="web_hosts", cidr="10.0.0.0/24")
    found = refusal([renamed, old], renamed, ("proxmox_firewall_alias",), keys_of)
    assert "firewall_alias web_hosts on homelab" in found and "state web-hosts" in found
    assert refusal([renamed, old], old, ("proxmox_firewall_alias",), keys_of) is not None
    assert refusal([renamed], renamed, ("proxmox_firewall_alias",), keys_of) is None, (
        "a rename alone is one declaration"
    )
    policy = low("creds", "openbao_policy", name="creds-v2", rename_from="Creds")
    kept = low("creds-old", "openbao_policy", name="creds")
    found = refusal([policy, kept], policy, (policies.STATE,), policies.chunk_keys)
    assert "policy creds on openbao" in found
