"""Through the state module and the ``proxmox`` execution module (not the contract, which runs each
family's first kind): a security group that a ``proxmox_firewall.rules`` state of the same run still
uses is not deleted, so the run's declared rules reach the usage scan (``_modules/proxmox.py``
``_noting_declared_rules``, ``salt_proxmox.firewall.usage.declare_rules``)."""

from __future__ import annotations

from tests.conformance.conftest import Minion
from tests.support.cluster import ROUTER_VMID
from tests.support.saltworld import Low


def test_a_group_a_rule_of_the_same_run_uses_is_not_deleted(minion: Minion) -> None:
    made, _ = minion.run([Low("proxmox_firewall", "group", {"name": "webgrp"})], test=False)
    assert made[0]["result"] is True, made
    gone = Low("proxmox_firewall", "group_absent", {"name": "webgrp", "removal": "destroy"})
    rules = Low(
        "proxmox_firewall",
        "rules",
        {"name": f"vm/{ROUTER_VMID}", "rules": [{"type": "group", "action": "webgrp", "enable": 1}]},
        "guest-rules",
    )
    (refused, _rules), log = minion.run([gone, rules], test=True)
    assert refused["result"] is False and f"declared VM {ROUTER_VMID} rule 0 (group)" in refused["comment"]
    assert [method for method, _, _ in log if method != "GET"] == []
    (planned,), _ = minion.run([gone], test=True)
    assert planned["result"] is None and "deleted" in planned["changes"], planned
