"""The export of OpenBao's ACL policies (``proxmox.export``, under ``openbao:policies``): every policy
OpenBao lists but the two it ships (``default``, ``root``: ``openbao_policy.policy.UNDELETABLE``), each
as one inline fragment holding its text, with ``adopt: true``. A text that does not end in exactly one
newline is not what the state assembles from a fragment (``policy.assemble``): it is exported, and a
note says its plan rewrites that white space."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import hvac.exceptions
import requests

from salt_proxmox.export.objects import Exported, Found
from salt_proxmox.openbao.client import OpenBaoError, describe_failure
from salt_proxmox.openbao_policy.lifecycle import BaoContext, read_policy
from salt_proxmox.openbao_policy.policy import UNDELETABLE, assemble, fragments_from


def policy_names(ctx: BaoContext) -> list[str]:
    """The ACL policies OpenBao lists (``LIST sys/policies/acl``, which needs ``list`` on that path),
    sorted. Raises OpenBaoError."""
    try:
        answer = ctx.client.sys.list_acl_policies()
    except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
        raise OpenBaoError(f"listing policies: {describe_failure(exc)}") from None
    data = answer.get("data", answer) if isinstance(answer, Mapping) else {}
    names = data.get("keys") if isinstance(data, Mapping) else None
    if not isinstance(names, list):
        raise OpenBaoError("listing policies: OpenBao answered without a list of policies")
    return sorted(str(name) for name in names)


def export(ctx: BaoContext, keep: Callable[[dict], bool]) -> Found:
    """Every policy but OpenBao's own whose ``{name}`` ``keep`` accepts, as ``Exported``; one the
    token may not read is left out with a note. Raises OpenBaoError when the list cannot be read
    (the token needs ``list`` on ``sys/policies/acl``)."""
    found = Found()
    for name in policy_names(ctx):
        if name in UNDELETABLE or not keep({"name": name}):
            continue
        try:
            text = read_policy(ctx, name)
        except OpenBaoError as exc:
            found.notes.append(f"policy {name}: not exported, it cannot be read: {exc}")
            continue
        if text is None:
            continue
        if assemble(fragments_from([text])) != text:
            found.notes.append(
                f"policy {name}: its text does not end in exactly one newline, as a declared fragment is "
                "written; its first plan rewrites that white space"
            )
        declaration = {"name": name, "fragments": [text], "adopt": True}
        found.objects.append(Exported({"name": name}, declaration, f"policy {name}"))
    return found
