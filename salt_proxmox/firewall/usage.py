"""Which firewall rules and IP set entries name a cluster alias (docs/design.md §7, firewall aliases).

PVE has no usage check: ``DELETE /cluster/firewall/aliases/{name}`` and a rename
(``update_alias`` with ``rename``) succeed while rules still name the alias, and from then on
pve-firewall's compiler cannot resolve it (``src/PVE/Firewall.pm`` ``resolve_alias`` dies ``no such
alias``; ``verify_rule`` marks the rule with that error and it is left out of the ruleset), so the
rule silently stops matching. So before this product deletes or renames a cluster alias it reads
every place that can name one, with the read credential, and refuses while any does.

Where a reference can stand, and what it resolves to (pve-firewall 6.0.4, git 6f1311f,
``src/PVE/Firewall.pm``):

- a rule's ``source`` or ``dest`` is one alias name, alone (``parse_address_list``: an alias is
  never part of a comma list), optionally scoped ``dc/`` (the cluster's) or ``guest/`` (the guest's
  own); an IP set entry's ``cidr`` likewise (``parse_fw_config``'s ``ipset`` section);
- names compare case-insensitively (``resolve_alias``: ``lc``);
- unscoped, a guest's own alias of that name wins over the cluster's (``resolve_alias``: the local
  config first, unless ``dc/``), so in a guest's rules and IP sets a bare name refers to the cluster
  alias only when the guest has no alias of its own by that name; ``guest/`` never does;
- at cluster scope (cluster rules, cluster IP sets, security groups) and in a node's rules (a node
  has no aliases of its own) a bare name or ``dc/`` is the cluster's alias. A security group's rule
  is counted whatever guest uses it: the group is cluster configuration.

Disabled rules (``enable: 0``) count: enabling one later would meet the missing alias.

Reads: ``GET cluster/firewall/rules``, ``…/ipset`` and each set, ``…/groups`` and each group,
``GET nodes`` and each node's ``…/firewall/rules``, and per guest the index
(``cluster/resources?type=vm``) lists: its ``rules``, ``aliases``, ``ipset`` and each set. Guest
reads go out ``target.concurrency`` at a time (``ReadAhead.fill``). A read that fails is an error,
never "no reference": a delete is planned only on a complete scan. The guest index lists only the
guests the read credential may audit (``VM.Audit``), so the plan says how many guests it scanned.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from salt_proxmox.guest.absence import index_rows
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.errors import PveMalformed
from salt_proxmox.pve.listing import rows_of

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.pve.client import Credential
    from salt_proxmox.run.context import PveContext

CLUSTER = "cluster/firewall"
#: The rule fields that can name an alias (``$rule_format``'s address fields).
ADDRESS_FIELDS = ("source", "dest")


def names_alias(value: object, alias: str, shadowed: bool = False) -> bool:
    """True when ``value`` (a rule's ``source``/``dest`` or an IP set entry's ``cidr``) names the
    cluster alias ``alias`` (case-insensitively): ``dc/<alias>``, or the bare name unless
    ``shadowed`` (the scope has an alias of its own by that name). ``guest/<alias>`` never does."""
    if not isinstance(value, str):
        return False
    folded = value.strip().lower()
    name = alias.lower()
    return folded == f"dc/{name}" or (folded == name and not shadowed)


def _rows(ctx: PveContext, credential: Credential, path: str, what: str) -> list[Mapping]:
    try:
        return rows_of(ctx.reads.get(ctx.client, path, credential), what)
    except ValueError as why:
        raise PveMalformed("GET", path, str(why)) from None


def _rule_users(rows: Iterable[Mapping], alias: str, where: str, shadowed: bool = False) -> list[str]:
    users = []
    for rule in rows:
        disabled = ", disabled" if str(rule.get("enable", "1")) == "0" else ""
        for key in ADDRESS_FIELDS:
            if names_alias(rule.get(key), alias, shadowed):
                users.append(f"{where} rule {rule.get('pos', '?')} ({key}{disabled})")
    return users


def _ipset_users(
    ctx: PveContext, credential: Credential, base: str, alias: str, where: str, shadowed: bool = False
) -> list[str]:
    users = []
    for ipset in _rows(ctx, credential, f"{base}/ipset", "IP sets"):
        name = ipset.get("name")
        if not isinstance(name, str) or not name:
            raise PveMalformed("GET", f"{base}/ipset", "an IP set without a name")
        for entry in _rows(ctx, credential, f"{base}/ipset/{api_path(name)}", "IP set entries"):
            if names_alias(entry.get("cidr"), alias, shadowed):
                users.append(f"{where} IP set {name} entry {entry.get('cidr')}")
    return users


def _guest_base(row: Mapping) -> str:
    return f"nodes/{api_path(str(row['node']))}/{row['type']}/{row['vmid']}/firewall"


def alias_users(ctx: PveContext, alias: str) -> tuple[list[str], int]:
    """Every rule and IP set entry that names cluster alias ``alias``, as phrases an operator can
    find them by (``cluster rule 3 (source)``, ``security group web rule 0 (dest)``, ``node pve1
    rule 2 (dest, disabled)``, ``VM 210 IP set admins entry dc/lab``), and how many guests were
    scanned.

    Raises PveError, PveUnreachable or CredentialError for a read that fails and PveMalformed for
    an answer without the promised shape: an incomplete scan never reads as "no reference"."""
    credential = ctx.broker.read()
    users = _rule_users(_rows(ctx, credential, f"{CLUSTER}/rules", "rules"), alias, "cluster")
    users += _ipset_users(ctx, credential, CLUSTER, alias, "cluster")
    for group in _rows(ctx, credential, f"{CLUSTER}/groups", "security groups"):
        name = group.get("group")
        if not isinstance(name, str) or not name:
            raise PveMalformed("GET", f"{CLUSTER}/groups", "a security group without a name")
        rows = _rows(ctx, credential, f"{CLUSTER}/groups/{api_path(name)}", "rules")
        users += _rule_users(rows, alias, f"security group {name}")
    for node in _rows(ctx, credential, "nodes", "nodes"):
        name = node.get("node")
        if not isinstance(name, str) or not name:
            raise PveMalformed("GET", "nodes", "a node without a name")
        rows = _rows(ctx, credential, f"nodes/{api_path(name)}/firewall/rules", "rules")
        users += _rule_users(rows, alias, f"node {name}")
    guests = index_rows(ctx, credential)
    bases = [_guest_base(row) for row in guests]
    ctx.reads.fill(
        ctx.client,
        credential,
        [f"{base}/{what}" for base in bases for what in ("aliases", "rules", "ipset")],
        ctx.target.concurrency,
    )
    for row, base in zip(guests, bases, strict=True):
        where = f"{'CT' if row['type'] == 'lxc' else 'VM'} {row['vmid']}"
        own = _rows(ctx, credential, f"{base}/aliases", "aliases")
        shadowed = any(str(entry.get("name", "")).lower() == alias.lower() for entry in own)
        users += _rule_users(_rows(ctx, credential, f"{base}/rules", "rules"), alias, where, shadowed)
        users += _ipset_users(ctx, credential, base, alias, where, shadowed)
    return users, len(guests)


def refusal(ctx: PveContext, alias: str, remedy: str) -> list[str]:
    """The plan's refusal of deleting cluster alias ``alias`` (alone or as the old name of a rename)
    while rules or IP set entries name it (``alias_users``), ending in ``remedy``; ``[]`` when none
    does.

    Raises as ``alias_users``."""
    users, _guests = alias_users(ctx, alias)
    if not users:
        return []
    shown = ", ".join(users[:10]) + (f" and {len(users) - 10} more" if len(users) > 10 else "")
    return [
        f"firewall alias {alias} is still named by {shown}. PVE deletes an alias whatever names it, and "
        "those rules would silently stop matching (pve-firewall resolve_alias: `no such alias`). " + remedy
    ]
