"""``proxmox:nodes:all`` in the formula (``formula/proxmox/init.sls`` ``_nodes``): the kinds every node of
the target takes, expanded at render over the nodes ``proxmox.cluster_resources type=node`` lists, each
node its own states; a node also declared by name keeps its own kind whole; a read that fails is one
failing state, never zero nodes. Salt's functions are a fake ``__salt__`` holding that one read."""

from __future__ import annotations

import pytest

from tests.support.formula import formula

NODES = [{"type": "node", "node": "pve2", "id": "node/pve2"}, {"type": "node", "node": "pve1"}]
DNS = {"search": "lab.example", "dns1": "192.0.2.53", "dns2": "192.0.2.54", "adopt": True}
TIME = {"timezone": "Europe/Vienna", "adopt": True}


class Read:
    """``proxmox.cluster_resources`` answering ``answer`` (raised when an exception), recording each call."""

    def __init__(self, answer: object = NODES) -> None:
        self.answer, self.calls = answer, []

    def __call__(self, **kwargs: object) -> object:
        self.calls.append(kwargs)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def render(nodes: dict, read: Read | None = None) -> dict:
    module = formula()
    module.__pillar__ = {"proxmox": {"nodes": nodes}}
    if read is not None:
        module.__salt__ = {"proxmox.cluster_resources": read}
    return module.run()


def failing(states: dict) -> dict[str, str]:
    return {
        sid: state["proxmox_pillar.refused"][1]["comment"]
        for sid, state in states.items()
        if "proxmox_pillar.refused" in state
    }


def test_all_is_one_state_per_node_with_the_ids_and_arguments_of_the_nodes_declared_by_name():
    read = Read()
    expanded = render({"all": {"target": "lab", "dns": DNS, "time": TIME}}, read)
    named = render({node: {"target": "lab", "dns": DNS, "time": TIME} for node in ("pve1", "pve2")})
    assert expanded == named
    assert list(expanded) == [
        "proxmox-node-pve1-dns",
        "proxmox-node-pve1-time",
        "proxmox-node-pve2-dns",
        "proxmox-node-pve2-time",
    ]
    assert read.calls == [{"type": "node", "target": "lab"}], "one read, of all's target, its nodes only"


def test_rows_other_than_nodes_name_no_node():
    rows = [*NODES, {"type": "qemu", "node": "pve3", "vmid": 100}, {"type": "storage", "node": "pve4"}]
    assert {sid.split("-")[2] for sid in render({"all": {"time": TIME}}, Read(rows))} == {"pve1", "pve2"}


def test_a_named_node_s_kind_replaces_all_s_whole_and_all_s_other_kinds_still_apply():
    states = render({"all": {"dns": DNS, "time": TIME}, "pve2": {"dns": {"search": "other.example"}}}, Read())
    # Not merged: pve2's DNS settings are what its own entry says, all's servers unmanaged there.
    assert states["proxmox-node-pve2-dns"] == {
        "proxmox_node.dns": [{"name": "pve2"}, {"search": "other.example"}]
    }
    assert states["proxmox-node-pve2-time"] == {
        "proxmox_node.time": [{"name": "pve2"}, {"adopt": True}, {"timezone": "Europe/Vienna"}]
    }
    assert states["proxmox-node-pve1-dns"]["proxmox_node.dns"][1:] == [
        {"adopt": True},
        {"dns1": "192.0.2.53"},
        {"dns2": "192.0.2.54"},
        {"search": "lab.example"},
    ]


def test_a_named_node_s_absent_kind_forgets_it_there_and_a_node_the_cluster_lacks_keeps_its_own():
    nodes = {"all": {"time": TIME}, "pve1": {"time": {"ensure": "absent"}}, "pve9": {"dns": DNS}}
    states = render(nodes, Read())
    assert states["proxmox-node-pve1-time"] == {"proxmox_node.time_absent": [{"name": "pve1"}]}
    assert "proxmox_node.time" in states["proxmox-node-pve2-time"]
    # pve9 is not listed: its own states render (its state refuses it at plan), all's do not reach it.
    assert [sid for sid in states if "pve9" in sid] == ["proxmox-node-pve9-dns"]


def test_a_refused_named_kind_still_overrides_all_s_so_the_node_has_one_state_of_that_kind():
    states = render({"all": {"time": TIME}, "pve1": {"time": "Europe/Vienna"}}, Read())
    assert "not a mapping" in failing(states)["proxmox-node-pve1-time"]
    assert [sid for sid in states if sid.startswith("proxmox-node-pve1-time")] == ["proxmox-node-pve1-time"]


def test_a_named_node_all_lists_is_on_all_s_target_unless_it_names_one():
    states = render({"all": {"target": "lab", "time": TIME}, "pve1": {"dns": DNS}}, Read())
    assert {"target": "lab"} in states["proxmox-node-pve1-dns"]["proxmox_node.dns"]
    other = {"target": "lab", "dns": {**DNS, "target": "lab"}}
    assert render({"all": {"target": "lab", "time": TIME}, "pve1": other}, Read()) == states


def test_a_named_node_on_another_target_than_all_s_is_refused_and_gets_none_of_all_s_kinds():
    states = render({"all": {"target": "lab", "time": TIME}, "pve1": {"target": "prod", "dns": DNS}}, Read())
    assert 'target "prod" is not proxmox:nodes:all\'s ("lab")' in failing(states)["proxmox-node-pve1-pillar"]
    assert "proxmox-node-pve1-time" not in states
    assert {"target": "prod"} in states["proxmox-node-pve1-dns"]["proxmox_node.dns"]
    assert "proxmox_node.time" in states["proxmox-node-pve2-time"]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (RuntimeError("proxmox:targets: several targets are configured"), "several targets are configured"),
        ({"error": "no answer"}, "answered a mapping, not a list of rows"),
        ([], "named no node"),
        ([{"type": "qemu", "node": "pve1"}], "named no node"),
        ([{"type": "node"}], "a node that is no name"),
        ([{"type": "node", "node": "pve\n1"}], "a node that is no name"),
        (None, "rendered without Salt's functions"),
    ],
)
def test_a_failed_node_read_is_one_failing_state_naming_why_never_zero_nodes(answer, reason):
    read = None if answer is None else Read(answer)
    states = render({"all": {"dns": DNS, "time": TIME}, "pve1": {"hosts": {"data": "x"}}}, read)
    assert failing(states) == {"proxmox-node-all": failing(states)["proxmox-node-all"]}
    assert reason in failing(states)["proxmox-node-all"]
    assert "the nodes of the default target could not be read" in failing(states)["proxmox-node-all"]
    # The named node's own kind does not depend on the read; none of all's kinds is rendered.
    assert list(states) == ["proxmox-node-all", "proxmox-node-pve1-hosts"]


def test_a_misspelt_kind_under_all_is_refused_by_name_and_the_other_kinds_still_expand():
    states = render({"all": {"dsn": DNS, "time": TIME}}, Read())
    assert failing(states) == {
        "proxmox-node-all-pillar": "pillar proxmox:nodes:all has unknown key(s) dsn: it takes apt, dns, "
        "hosts, target, time. Nothing was written."
    }
    expanded = [sid for sid in states if "pillar" not in sid]
    assert expanded == ["proxmox-node-pve1-time", "proxmox-node-pve2-time"]


def test_a_target_under_one_of_all_s_kinds_is_refused_its_nodes_are_all_s_targets():
    states = render({"all": {"target": "lab", "dns": {**DNS, "target": "prod"}, "time": TIME}}, Read())
    assert "declare target: on proxmox:nodes:all" in failing(states)["proxmox-node-all-dns"]
    assert [sid for sid in states if "dns" in sid] == ["proxmox-node-all-dns"]
    same = render({"all": {"target": "lab", "dns": {**DNS, "target": "lab"}}}, Read())
    assert not failing(same) and "proxmox-node-pve1-dns" in same


@pytest.mark.parametrize("nodes", [{"pve1": {"dns": DNS}}, {"all": {"dsn": DNS}}, {"all": {"dns": "x"}}])
def test_nothing_is_read_without_a_kind_of_all_to_expand(nodes):
    read = Read(AssertionError("read"))
    render(nodes, read)
    assert read.calls == []


def test_the_formula_s_node_kinds_are_the_library_s_pillar_keys():
    # formula/proxmox/init.sls NODE_KINDS (pillar key -> state function) cannot import salt_proxmox.
    from salt_proxmox.node import PILLAR_KEYS
    from salt_proxmox.registry import FAMILIES

    (node,) = [f for f in FAMILIES if f.name == "node"]
    by_function = {kind.present: PILLAR_KEYS[kind.name] for kind in node.kinds}
    assert {key: fun for fun, key in by_function.items()} == formula().NODE_KINDS
