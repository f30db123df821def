"""The ad-hoc read of a rule list (``proxmox.firewall_rules_get``, ``registry`` ``Kind.get``): what the
``proxmox_firewall.rules`` state compares, read with the read credential, never a write."""

from __future__ import annotations

from typing import TYPE_CHECKING

from salt_proxmox.firewall import rules
from salt_proxmox.firewall.ruleset import line

if TYPE_CHECKING:
    from salt_proxmox.run.context import PveContext


def rules_get(ctx: PveContext, name: object = None) -> list[str] | None:
    """The rule list of scope ``name`` (``cluster``, ``node/<node>``, ``vm/<vmid>``, ``ct/<vmid>``,
    ``group/<name>``) as the state compares it: each rule's ``.fw`` line, first rule first; None when
    the scope's guest or group does not exist (pve-firewall ``API2/Firewall/Rules.pm`` ``get_rules``
    is then refused). Raises DeclarationError for a scope PVE has no rule list at, PveError for a
    read that fails."""
    scope = rules.identify("adhoc", ctx.target.name, name)
    located = rules.firewall_of(ctx, scope)
    if located is None:
        return None
    live = rules.read(ctx, rules.rules_path(scope, located.path))
    return [line(rule) for rule in live.rules]
