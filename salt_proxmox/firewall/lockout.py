"""Would this firewall drop the traffic this minion manages the cluster with? (docs/design.md §7c)

A pure model of what pve-firewall 6.0.4 (git 6f1311f, ``src/PVE/Firewall.pm``) makes of a node's
inbound traffic, for one new TCP connection (the minion's source address to a member's port 8006 for
the API, or to a node's port 22 for SSH):

- ``compile``: nothing is filtered unless the cluster option ``enable`` is true; a node's own
  ``enable: 0`` turns its host firewall off (``compile_iptables_filter``: ``$hostfw_enable``);
- ``enable_host_firewall`` builds ``PVEFW-HOST-IN`` in this order: ``-i lo`` accepted, established
  connections accepted (``ruleset_chain_add_conn_filters``), then **the node's rules, then the
  cluster's** ("add host rules first, so that cluster wide rules can be overwritten"), each enabled
  rule without errors of type ``in`` or ``group`` (a group's ``in`` rules: an ``ACCEPT`` there
  accepts, a ``DROP``/``REJECT`` drops), then the ``management`` IP set's sources accepted on
  8006, 5900-5999, 3128, 22 and 60000-60050, then the cluster's ``policy_in`` (default ``DROP``);
- the ``management`` IP set is the cluster's IP set of that name plus ``local_network``
  (``compile``): the cluster alias ``local_network`` when there is one, else the network of the
  node's own address found in its routing table (``local_network``), which the API does not show;
- a rule naming an alias or IP set that does not exist has errors and is left out
  (``verify_rule``); a macro expands into its rows (``apply_macro``).

What the model cannot see, it treats as the worse case for the minion: a rule's ``iface`` (the
interface the traffic arrives on), ``sport`` (the client's port), a port given by a service name it
does not know, and ``local_network`` without the alias. A ``DROP`` or ``REJECT`` that *may* match
drops; an ``ACCEPT`` that may match does not count. Because that can call traffic dropped which in
truth passes (the node's local network), ``lockout`` refuses only a change: traffic the firewall as
it stands lets through and the firewall after the change drops. Traffic already judged dropped
before the change is reported as beyond the model, never refused.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from salt_proxmox.firewall.ruleset import MACROS, Rule, line

#: The management IP set's ports (``enable_host_firewall``): API, VNC, SPICE, SSH, migration.
MANAGEMENT_PORTS = ((8006, 8006), (5900, 5999), (3128, 3128), (22, 22), (60000, 60050))
#: The service names a ``dport`` may use that the model knows (Debian netbase ``/etc/services``).
SERVICES = {"ssh": 22, "https": 443, "http": 80, "telnet": 23, "domain": 53, "ftp": 21, "smtp": 25}

YES, NO, MAYBE = "yes", "no", "maybe"


@dataclass(frozen=True)
class Firewall:
    """The effective firewall of the cluster, as live reads and this run's declarations make it:

    - ``cluster_options``: ``GET /cluster/firewall/options`` (``enable``, ``policy_in``);
    - ``node_options``: ``{node: GET /nodes/{node}/firewall/options}`` (``enable``);
    - ``cluster_rules``, ``node_rules`` (``{node: rules}``), ``groups`` (``{name: rules}``): canonical
      rules (``salt_proxmox.firewall.ruleset``), first rule first;
    - ``aliases``: the cluster's ``{lower-case name: cidr}``; ``ipsets``: the cluster's ``{name:
      [{cidr, nomatch}]}``."""

    cluster_options: Mapping[str, object] = field(default_factory=dict)
    node_options: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    cluster_rules: Sequence[Rule] = ()
    node_rules: Mapping[str, Sequence[Rule]] = field(default_factory=dict)
    groups: Mapping[str, Sequence[Rule]] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)
    ipsets: Mapping[str, Sequence[Mapping[str, object]]] = field(default_factory=dict)


@dataclass(frozen=True)
class Traffic:
    """One connection the minion needs: ``what`` (``the API``, ``SSH``) from ``source`` to ``dest``
    port ``port`` on ``node``."""

    what: str
    node: str
    source: str
    dest: str
    port: int

    def __str__(self) -> str:
        return f"{self.what} (tcp {self.source} → {self.dest}:{self.port} on node {self.node})"


@dataclass(frozen=True)
class Verdict:
    """``accepted``, and ``by``: what decides it (``cluster rule 2 `IN DROP -p tcp -dport 8006```)."""

    accepted: bool
    by: str


def enabled(value: object) -> bool:
    """Whether a firewall ``enable`` option turns the firewall on: a positive integer (pve-firewall
    ``Firewall.pm``: the cluster's is stored as a time stamp when set above 1), else off; a value that
    is no integer is off."""
    try:
        return int(str(value)) > 0
    except ValueError:
        return False


def _in(address: str, text: str, fw: Firewall, depth: int = 0) -> str:
    """Whether ``address`` is in ``text`` (a rule's or IP set entry's address: a list, a range, an
    alias, an IP set): YES, NO or MAYBE (an IP set or alias the model cannot resolve)."""
    ip = ipaddress.ip_address(address)
    if depth > 4:
        return MAYBE
    if text.startswith("+"):
        name = re.sub(r"^\+(dc/|guest/)?", "", text)
        if text.startswith("+sdn/"):
            return MAYBE
        return _in_ipset(address, name, fw, depth)
    alias = re.fullmatch(r"(dc/|guest/)?([A-Za-z][A-Za-z0-9\-_]+)", text)
    if alias:
        if alias.group(2).lower() == "local_network" and "local_network" not in fw.aliases:
            return MAYBE
        cidr = fw.aliases.get(alias.group(2).lower())
        return MAYBE if cidr is None else _in(address, cidr, fw, depth + 1)
    for item in text.split(","):
        try:
            if "-" in item:
                first, last = (ipaddress.ip_address(part) for part in item.split("-", 1))
                if first.version == ip.version and first <= ip <= last:
                    return YES
            elif ip in ipaddress.ip_network(item, strict=False):
                return YES
        except (ValueError, TypeError):
            return MAYBE
    return NO


def _in_ipset(address: str, name: str, fw: Firewall, depth: int) -> str:
    """IP set semantics (hash:net with ``nomatch``): the most specific entry holding the address
    decides; ``management`` also holds ``local_network`` (``compile``)."""
    entries = list(fw.ipsets.get(name.lower(), ()))
    management = name.lower() == "management"
    if management and "local_network" in fw.aliases:
        entries.append({"cidr": fw.aliases["local_network"]})
    elif not management and name.lower() not in fw.ipsets:
        return NO  # a rule naming a missing IP set has errors and is left out
    best, verdict = -1, NO
    for entry in entries:
        cidr = str(entry.get("cidr", ""))
        hit = _in(address, cidr, fw, depth + 1)
        if hit == NO:
            continue
        if hit == MAYBE:
            return MAYBE
        try:
            length = ipaddress.ip_network(fw.aliases.get(cidr.lower(), cidr), strict=False).prefixlen
        except ValueError:
            length = 0
        if length > best:
            best, verdict = length, (NO if entry.get("nomatch") else YES)
    if management and verdict != YES and "local_network" not in fw.aliases:
        return MAYBE  # the node's local network, from its routing table, may hold it
    return verdict


def _port_in(port: int, spec: str) -> str:
    found = NO
    for item in spec.split(","):
        ranged = re.fullmatch(r"(\d+):(\d+)", item)
        if ranged and int(ranged.group(1)) <= port <= int(ranged.group(2)):
            return YES
        if item.isdigit() and int(item) == port:
            return YES
        if not item.isdigit() and not ranged:
            if item in SERVICES:
                if SERVICES[item] == port:
                    return YES
            else:
                found = MAYBE
    return found


def _all(*results: str) -> str:
    if NO in results:
        return NO
    return MAYBE if MAYBE in results else YES


def _matches(rule: Rule, traffic: Traffic, fw: Firewall) -> tuple[str, str]:
    """Whether ``rule`` (type ``in``) matches ``traffic``, and why not surely (``on interface …``)."""
    why = []
    checks = []
    if rule.get("iface"):
        checks.append(MAYBE)
        why.append(f"if it arrives on {rule['iface']}")
    for key, address in (("source", traffic.source), ("dest", traffic.dest)):
        if rule.get(key):
            hit = _in(address, rule[key], fw)
            checks.append(hit)
            if hit == MAYBE:
                why.append(f"if {rule[key]} holds {address}")
    rows = MACROS.get(rule.get("macro", ""), ((rule.get("proto"), rule.get("dport"), rule.get("sport")),))
    row_hits = []
    for proto, dport, sport in rows:
        proto = rule.get("proto", proto)
        dport = rule.get("dport", dport)
        sport = rule.get("sport", sport)
        hits = [YES if proto in (None, "tcp", "6") else NO]
        hits.append(YES if dport is None else _port_in(traffic.port, dport))
        hits.append(YES if sport is None else MAYBE)
        row_hits.append(_all(*hits))
    if rule.get("sport"):
        why.append(f"if the client's port is in {rule['sport']}")
    checks.append(YES if YES in row_hits else MAYBE if MAYBE in row_hits else NO)
    return _all(*checks), ", ".join(why)


def _walk(
    rules: Sequence[Rule], where: str, traffic: Traffic, fw: Firewall, depth: int = 0
) -> Verdict | None:
    """The first rule of ``rules`` that decides ``traffic`` (an ACCEPT that surely matches, a DROP or
    REJECT that may), or None."""
    for index, rule in enumerate(rules):
        if not rule.get("enable") or rule.get("type") not in ("in", "group"):
            continue
        named = f"{where} rule {index} `{line(rule)}`"
        if rule["type"] == "group":
            if depth or rule["action"] not in fw.groups:
                continue
            if rule.get("iface"):
                # Only traffic on that interface enters the group: its ACCEPTs do not count, its DROPs may.
                inner = _walk(fw.groups[rule["action"]], f"security group {rule['action']}", traffic, fw, 1)
                if inner is not None and not inner.accepted:
                    return Verdict(False, f"{inner.by} (through {named}, if it arrives on {rule['iface']})")
                continue
            inner = _walk(fw.groups[rule["action"]], f"security group {rule['action']}", traffic, fw, 1)
            if inner is not None:
                return Verdict(inner.accepted, f"{inner.by} (through {named})")
            continue
        hit, why = _matches(rule, traffic, fw)
        if hit == NO:
            continue
        if rule["action"] == "ACCEPT":
            if hit == YES:
                return Verdict(True, named)
            continue
        return Verdict(False, named + (f" ({why})" if hit == MAYBE and why else ""))
    return None


def verdict(fw: Firewall, traffic: Traffic) -> Verdict:
    """What the firewall ``fw`` does with ``traffic`` (see the module docstring for the order)."""
    if not enabled(fw.cluster_options.get("enable", 0)):
        return Verdict(True, "the cluster firewall is off (enable: 0)")
    node = fw.node_options.get(traffic.node, {})
    if str(node.get("enable", "1")) == "0":
        return Verdict(True, f"node {traffic.node}'s firewall is off (enable: 0)")
    own = fw.node_rules.get(traffic.node, ())
    for rules, where in ((own, f"node {traffic.node}"), (fw.cluster_rules, "cluster")):
        decided = _walk(rules, where, traffic, fw)
        if decided is not None:
            return decided
    managed = any(low <= traffic.port <= high for low, high in MANAGEMENT_PORTS)
    if managed and _in_ipset(traffic.source, "management", fw, 0) == YES:
        return Verdict(True, "the management IP set (pve-firewall accepts its sources on this port)")
    policy = str(fw.cluster_options.get("policy_in") or "DROP")
    if policy == "ACCEPT":
        return Verdict(True, "the cluster's policy_in ACCEPT")
    return Verdict(
        False,
        f"the cluster's policy_in {policy} (no rule accepts it first, and the management IP set is not "
        f"known to hold {traffic.source})",
    )


def lockout(
    after: Firewall, traffic: Sequence[Traffic], before: Firewall | None = None
) -> tuple[list[str], list[str]]:
    """``(refusals, notes)`` for firewall ``after`` (the state a plan leads to) and the minion's
    ``traffic``: a refusal per connection ``after`` drops that ``before`` (the firewall as it stands;
    None: judge ``after`` alone) lets through, naming the rule or policy that drops it; a note per
    connection the model finds dropped already before (it cannot explain how the minion reaches it)."""
    refusals, notes = [], []
    for each in traffic:
        now = verdict(after, each)
        if now.accepted:
            continue
        was = verdict(before, each) if before is not None else None
        if was is not None and not was.accepted:
            notes.append(
                f"the firewall model finds {each} dropped already by {was.by}, yet this minion reaches it: "
                "something it cannot see lets it through (local_network, an interface), so this change is "
                "not judged for it"
            )
            continue
        refusals.append(f"{now.by} would drop this minion's {each}")
    return refusals, notes
