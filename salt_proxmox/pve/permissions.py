"""What a credential, or another user or API token, may do on a path: ``GET /access/permissions``.

Source: pve-access-control ``src/PVE/API2/AccessControl.pm`` ``permissions``. With ``path`` the
answer is ``{path: {privilege: propagate}}`` for that path alone, its privileges already the
effective ones (inherited from ``/`` and parent paths); without it, every path the caller holds
something on. A caller reads its own privileges freely; ``userid`` (a user or a token,
``user@realm!token``) reads another's, which needs Sys.Audit on ``/access`` (HTTP 403 otherwise).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.pve.errors import PveMalformed

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.pve.client import Credential
    from salt_proxmox.run.context import PveContext


def held_privileges(
    ctx: PveContext, credential: Credential, path: str, userid: str | None = None
) -> set[str]:
    """The privileges held on ``path`` by ``userid``, or by ``credential``'s own token when None,
    read with ``credential`` (``GET /access/permissions?path=[&userid=]``). A privilege listed for
    ``path`` itself is held whatever its value (the value is PVE's propagate flag); one listed for
    ``/`` or a parent path counts only when it propagates (value 1).

    Raises PveError (403 for another's privileges without Sys.Audit on ``/access``),
    PveMalformed for an answer that is not ``{path: {privilege: 0|1}}``, PveUnreachable.
    """
    params = {"path": path} if userid is None else {"userid": userid, "path": path}
    held = ctx.client.request("GET", "access/permissions", credential, params=params)
    if not isinstance(held, Mapping) or not all(isinstance(v, Mapping) for v in held.values()):
        raise PveMalformed("GET", "access/permissions", "expected {path: {privilege: 0|1}}")
    privileges: set[str] = set()
    for where, privs in held.items():
        if where == path:
            # Listed at all is held; the value is only the propagate flag (pve-access-control
            # RPCEnvironment.pm compile_acl_path: "a key being defined means the priv is set").
            privileges.update(privs)
        elif where == "/" or path.startswith(f"{where}/"):
            # Held on a parent reaches ``path`` only when it propagates.
            privileges.update(name for name, value in privs.items() if value not in (0, "0", False, None))
    return privileges
