"""A FakePve that keeps HA resources, groups and rules by release, as pve-ha-manager does.

fakepve 0.5.0 validates the ``/cluster/ha/*`` calls against PVE 9's schema and answers them with a
generic handler that stores nothing; a guest's ``ha_state`` (``status/current``'s ``ha``) is set by
hand. ``HaPve`` adds stateful routes written from pve-ha-manager ``src/PVE/API2/HA/Resources.pm``,
``Groups.pm``, ``Rules.pm`` and ``src/PVE/HA/Config.pm``, chosen by the fake's ``release_version``:

- ``ha_resources``: sid -> options as ``resources.cfg`` keeps them (only what was given); ``GET
  /cluster/ha/resources`` lists them with ``sid``, ``type`` and the file's ``digest``, ``GET …/{sid}``
  answers one or dies ``no such resource '<sid>'``; ``POST`` dies ``resource '<sid>' does not exist in
  cluster`` for a guest that is not there (``Resources/PVEVM.pm``/``PVECT.pm`` ``exists``), ``resource
  ID '<sid>' already defined``, and on PVE 9 ``invalid parameter 'group': ha groups have been migrated
  to rules`` (a create stores an unknown group as given, as ``create`` checks none). ``PUT`` checks the
  digest (``assert_if_modified``), dies ``HA group '<group>' does not exist`` for an unknown group and
  ``service '<sid>' in error state, must be disabled and fixed first`` for a guest whose ``ha_state`` is
  ``error`` unless it sets ``disabled`` (``check_service_state``), and takes ``delete``; ``DELETE`` dies
  ``cannot delete service '<sid>', not HA managed!`` and on PVE 9 takes the resource out of the rules
  naming it (``purge``, default 1; a rule left without resources is deleted). A resource sets its
  guest's ``ha_state`` to its ``state`` (default ``started``), so ``status/current`` shows it managed,
  as the CRM does; one in state ``ignored`` clears it (``HA/Config.pm`` ``get_service_status``:
  ``managed: 0``, and a start or shutdown is PVE's own, not HA's: ``vm_is_ha_managed`` is false), while
  a destroy without ``purge`` is still refused (``destroy_vm`` asks ``service_is_configured``).
- ``ha_groups`` (PVE 8): ``/cluster/ha/groups`` with ``no such ha group '<group>'``, ``ha group ID
  '<group>' already defined`` and ``ha group is used by service '<sid>'``; on PVE 9 every group method
  dies ``cannot index groups: ha groups have been migrated to rules`` (``cannot read group``,
  ``cannot create group``, … for the others), HTTP 500, never an empty list.
- ``ha_rules`` (PVE 9): ``/cluster/ha/rules`` with ``no such ha rule '<rule>'``, ``HA rule '<rule>'
  already defined``, ``cannot use unmanaged resource(s) <sids>.``, ``cannot use non-existent
  node(s) <nodes>.`` (``$assert_valid_nodes_param``), ``Rule '<rule>' is invalid.`` for a resource in
  two enabled node-affinity rules (``$assert_feasibility``, its other checks not modelled), ``HA rule
  '<rule>' does not exist``; on PVE 8
  the path does not exist: HTTP 501 ``Method '<method> <path>' not implemented``.

Differences from PVE: no CRM runs (a resource's state is its guest's ``ha_state`` at once), and the
digest is one hash of each file's sections, not the file's bytes.
"""

from __future__ import annotations

import hashlib
import json

from fakepve.model import PveError
from fakepve.routing import check_digest, die, split_list

from tests.support.restore import RestorePve

#: ``HA/Resources.pm``, ``HA/Groups.pm``, ``HA/Rules*.pm``: the options each section takes.
RESOURCE_KEYS = ("state", "group", "max_restart", "max_relocate", "comment", "failback")
GROUP_KEYS = ("nodes", "restricted", "nofailback", "comment")
RULE_KEYS = ("resources", "nodes", "strict", "affinity", "disable", "comment")


def _digest(sections: dict) -> str:
    return hashlib.sha1(json.dumps(sections, sort_keys=True).encode()).hexdigest()  # noqa: S324 - as PVE


class HaPve(RestorePve):
    """RestorePve with stateful HA resources, groups and rules (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.ha_resources: dict[str, dict] = {}
        self.ha_groups: dict[str, dict] = {}
        self.ha_rules: dict[str, dict] = {}

    # ---------------------------------------------------------------------------------- helpers

    def _major(self) -> int:
        return int(str(self.release_version).split(".")[0])

    def _ha_guest(self, sid: str):
        kind, _, vmid = sid.partition(":")
        return self.vm(int(vmid)) if kind == "vm" else self.ct(int(vmid))

    def _sync_guest(self, sid: str) -> None:
        guest = self._ha_guest(sid)
        if guest is None:
            return
        options = self.ha_resources.get(sid)
        state = None if options is None else options.get("state", "started")
        # Config.pm get_service_status: an ignored resource reads managed: 0 ($service_check_ha_state).
        guest.ha_state = None if state == "ignored" else state

    def _groups_gone(self, verb: str) -> None:
        if self._major() >= 9:
            raise die(f"cannot {verb}: ha groups have been migrated to rules")

    def _no_rules(self, method: str, path: str) -> None:
        if self._major() < 9:
            raise PveError(501, f"Method '{method} {path}' not implemented")

    @staticmethod
    def _set(section: dict, v: dict, keys: tuple[str, ...]) -> None:
        for key in split_list(v.get("delete")):
            section.pop(key, None)
        for key in keys:
            if v.get(key) is not None:
                section[key] = v[key]

    # ------------------------------------------------------------------------------------- routes

    def _routes_ha(self):
        return [
            ("GET", "/cluster/ha/resources", self._ha_resource_index),
            ("POST", "/cluster/ha/resources", self._ha_resource_create),
            ("GET", "/cluster/ha/resources/{sid}", self._ha_resource_read),
            ("PUT", "/cluster/ha/resources/{sid}", self._ha_resource_update),
            ("DELETE", "/cluster/ha/resources/{sid}", self._ha_resource_delete),
            ("GET", "/cluster/ha/groups", self._ha_group_index),
            ("POST", "/cluster/ha/groups", self._ha_group_create),
            ("GET", "/cluster/ha/groups/{group}", self._ha_group_read),
            ("PUT", "/cluster/ha/groups/{group}", self._ha_group_update),
            ("DELETE", "/cluster/ha/groups/{group}", self._ha_group_delete),
            ("GET", "/cluster/ha/rules", self._ha_rule_index),
            ("POST", "/cluster/ha/rules", self._ha_rule_create),
            ("GET", "/cluster/ha/rules/{rule}", self._ha_rule_read),
            ("PUT", "/cluster/ha/rules/{rule}", self._ha_rule_update),
            ("DELETE", "/cluster/ha/rules/{rule}", self._ha_rule_delete),
        ]

    # resources (Resources.pm)

    def _resource_row(self, sid: str) -> dict:
        return {
            "sid": sid,
            "type": sid.partition(":")[0],
            **self.ha_resources[sid],
            "digest": _digest(self.ha_resources),
        }

    async def _ha_resource_index(self, v, user):
        return [self._resource_row(sid) for sid in sorted(self.ha_resources)]

    async def _ha_resource_read(self, v, user):
        if v["sid"] not in self.ha_resources:
            raise die(f"no such resource '{v['sid']}'")
        return self._resource_row(v["sid"])

    async def _ha_resource_create(self, v, user):
        self.need_quorum()
        sid = v["sid"]
        if v.get("group") is not None and self._major() >= 9:
            raise die("invalid parameter 'group': ha groups have been migrated to rules")
        if self._ha_guest(sid) is None:
            raise die(f"resource '{sid}' does not exist in cluster")
        if sid in self.ha_resources:
            raise die(f"resource ID '{sid}' already defined")
        section: dict = {}
        self._set(section, v, RESOURCE_KEYS)
        self.ha_resources[sid] = section
        self._sync_guest(sid)
        return None

    async def _ha_resource_update(self, v, user):
        sid = v["sid"]
        check_digest(_digest(self.ha_resources), v.get("digest"))
        if sid not in self.ha_resources:
            raise die(f"no such resource '{sid}'")
        if v.get("group") is not None and self._major() >= 9:
            raise die("invalid parameter 'group': ha groups have been migrated to rules")
        if v.get("group") is not None and v["group"] not in self.ha_groups:
            raise die(f"HA group '{v['group']}' does not exist")
        guest = self._ha_guest(sid)
        if guest is not None and guest.ha_state == "error" and v.get("state") != "disabled":
            raise die(f"service '{sid}' in error state, must be disabled and fixed first")
        self._set(self.ha_resources[sid], v, RESOURCE_KEYS)
        self._sync_guest(sid)
        return None

    async def _ha_resource_delete(self, v, user):
        sid = v["sid"]
        if sid not in self.ha_resources:
            raise die(f"cannot delete service '{sid}', not HA managed!")
        del self.ha_resources[sid]
        self._sync_guest(sid)
        if self._major() >= 9 and str(v.get("purge", 1)) not in ("0", "false"):
            for rule_id, rule in list(self.ha_rules.items()):
                left = [item for item in split_list(rule.get("resources")) if item != sid]
                if not left:
                    del self.ha_rules[rule_id]
                else:
                    rule["resources"] = ",".join(left)
        return None

    # a guest's destroy (qemu-server API2/Qemu.pm / pve-container API2/LXC.pm destroy_vm)

    def _ignored_destroy(self, label: str, guest, v: dict, protection) -> None:
        """``destroy_vm`` asks ``service_is_configured``, which counts an ``ignored`` resource too
        (fakepve asks whether the guest reads managed, which an ignored one does not): after the
        protection check (``protection``), refused without ``purge``."""
        sid = f"{'ct' if label == 'CT' else 'vm'}:{guest.vmid}"
        if (self.ha_resources.get(sid) or {}).get("state") != "ignored" or v.get("purge"):
            return
        protection(guest, f"can't remove {label} {guest.vmid}")
        raise PveError(
            500, f"unable to remove {label} {guest.vmid} - used in HA resources and purge parameter not set."
        )

    async def _lxc_destroy(self, user, v):
        self._ignored_destroy("CT", self._find_ct(v["node"], v["vmid"]), v, self._check_protection)
        return await super()._lxc_destroy(user, v)

    async def _qm_destroy(self, v, user):
        self._ignored_destroy("VM", self.find(v["node"], v["vmid"]), v, self._qm_check_protection)
        return await super()._qm_destroy(v, user)

    # groups (Groups.pm, PVE 8)

    def _group_row(self, group: str) -> dict:
        return {"group": group, "type": "group", **self.ha_groups[group], "digest": _digest(self.ha_groups)}

    async def _ha_group_index(self, v, user):
        self._groups_gone("index groups")
        return [self._group_row(group) for group in sorted(self.ha_groups)]

    async def _ha_group_read(self, v, user):
        self._groups_gone("read group")
        if v["group"] not in self.ha_groups:
            raise die(f"no such ha group '{v['group']}'")
        return self._group_row(v["group"])

    async def _ha_group_create(self, v, user):
        self._groups_gone("create group")
        if v["group"] in self.ha_groups:
            raise die(f"ha group ID '{v['group']}' already defined")
        section: dict = {}
        self._set(section, v, GROUP_KEYS)
        self.ha_groups[v["group"]] = section
        return None

    async def _ha_group_update(self, v, user):
        self._groups_gone("update group")
        check_digest(_digest(self.ha_groups), v.get("digest"))
        if v["group"] not in self.ha_groups:
            raise die(f"no such ha group '{v['group']}'")
        self._set(self.ha_groups[v["group"]], v, GROUP_KEYS)
        return None

    async def _ha_group_delete(self, v, user):
        self._groups_gone("delete group")
        for sid, options in sorted(self.ha_resources.items()):
            if options.get("group") == v["group"]:
                raise die(f"ha group is used by service '{sid}'")
        if v["group"] not in self.ha_groups:
            raise die(f"no such ha group '{v['group']}'")
        del self.ha_groups[v["group"]]
        return None

    # rules (Rules.pm, PVE 9)

    def _rule_row(self, rule: str) -> dict:
        return {"rule": rule, **self.ha_rules[rule], "digest": _digest(self.ha_rules)}

    def _check_resources(self, resources: object) -> None:
        unknown = [sid for sid in sorted(split_list(resources)) if sid not in self.ha_resources]
        if unknown:
            raise die(f"cannot use unmanaged resource(s) {', '.join(unknown)}.")

    def _check_nodes(self, nodes: object) -> None:
        """``Rules.pm`` ``$assert_valid_nodes_param``: every node a cluster member
        (``PVE::Cluster::check_node_exists``; the fake's nodes are its members)."""
        named = sorted({item.split(":", 1)[0] for item in split_list(nodes)})
        unknown = [node for node in named if node not in self.nodes]
        if unknown:
            raise die(f"cannot use non-existent node(s) {', '.join(unknown)}.")

    def _check_feasible(self, rule_id: str, rule: dict) -> None:
        """``Rules.pm`` ``$assert_feasibility``, its ``NodeAffinity.pm``
        ``check_single_resource_reference`` only: a resource in two enabled node-affinity rules."""
        if rule.get("type") != "node-affinity" or str(rule.get("disable") or "0") not in ("0", ""):
            return
        for other_id, other in sorted(self.ha_rules.items()):
            if other_id == rule_id or other.get("type") != "node-affinity":
                continue
            if str(other.get("disable") or "0") not in ("0", ""):
                continue
            shared = sorted(set(split_list(rule.get("resources"))) & set(split_list(other.get("resources"))))
            if shared:
                errors = ", ".join(
                    f"resource '{sid}' is already used in another node affinity rule" for sid in shared
                )
                raise PveError(400, f"Rule '{rule_id}' is invalid.", {"resources": errors})

    async def _ha_rule_index(self, v, user):
        self._no_rules("GET", "/cluster/ha/rules")
        return [self._rule_row(rule) for rule in sorted(self.ha_rules)]

    async def _ha_rule_read(self, v, user):
        self._no_rules("GET", f"/cluster/ha/rules/{v['rule']}")
        if v["rule"] not in self.ha_rules:
            raise die(f"no such ha rule '{v['rule']}'")
        return self._rule_row(v["rule"])

    async def _ha_rule_create(self, v, user):
        self._no_rules("POST", "/cluster/ha/rules")
        if v["rule"] in self.ha_rules:
            raise die(f"HA rule '{v['rule']}' already defined")
        self._check_resources(v.get("resources"))
        if v.get("nodes"):
            self._check_nodes(v["nodes"])
        section: dict = {"type": v["type"]}
        self._set(section, v, RULE_KEYS)
        self._check_feasible(v["rule"], section)
        self.ha_rules[v["rule"]] = section
        return None

    async def _ha_rule_update(self, v, user):
        self._no_rules("PUT", f"/cluster/ha/rules/{v['rule']}")
        check_digest(_digest(self.ha_rules), v.get("digest"))
        if v["rule"] not in self.ha_rules:
            raise die(f"HA rule '{v['rule']}' does not exist")
        if v.get("type") and v["type"] != self.ha_rules[v["rule"]]["type"]:
            raise die("types does not match")
        if v.get("resources"):
            self._check_resources(v["resources"])
        if v.get("nodes"):
            self._check_nodes(v["nodes"])
        updated = dict(self.ha_rules[v["rule"]])
        self._set(updated, v, RULE_KEYS)
        self._check_feasible(v["rule"], updated)
        self.ha_rules[v["rule"]] = updated
        return None

    async def _ha_rule_delete(self, v, user):
        self._no_rules("DELETE", f"/cluster/ha/rules/{v['rule']}")
        if v["rule"] not in self.ha_rules:
            raise die(f"no such ha rule '{v['rule']}'")
        del self.ha_rules[v["rule"]]
        return None
