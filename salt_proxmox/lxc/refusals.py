"""PVE's deterministic refusals of a container write, predicted at plan from what the ``read``
credential can see, so the apply never meets them.

- Destroy: shared by guests (``guest.refusals``); a running container's destroy fails with
  "unable to destroy CT N - container is running" (``lxc.family.LXC.destroy_running``).
- Volumes of a protected guest (pve-container ``src/PVE/LXC/Config.pm`` ``update_pct_config``:
  ``check_protection`` for every ``rootfs``/``mpN`` write: "can't update CT N drive 'mp0' -
  protection mode enabled"), judged by ``protected_volume_refusals`` on the config already read.
- A privileged create on PVE 9 (``create_vm``: ``$rpcenv->check($authuser, '/', ['Sys.Modify'])
  if !$unprivileged``). The privileges are the provision token's, which the plan does not mint.
  When the provision token id is known without minting (``source: static``), the plan reads its
  effective privileges with the read credential, ``GET /access/permissions?userid=<token>&path=/``
  (PVE answers it for a caller with Sys.Audit on ``/access``); when it is not (``source:
  openbao`` mints a token per lease) or that read is refused, the plan says so and the apply checks
  the minted credential's own privileges (``GET /access/permissions?path=/``, which any token may
  read about itself) before the create is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.access.privileges import PRIVILEGED_CT
from salt_proxmox.errors import Refused
from salt_proxmox.guest.refusals import protected, provision_privilege_check
from salt_proxmox.lxc.schema import WORDS
from salt_proxmox.pve.permissions import held_privileges

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.pve.client import Credential
    from salt_proxmox.run.context import PveContext


def protected_volume_refusals(vmid: int, live: Mapping[str, object], keys: list[str]) -> list[str]:
    """One sentence per volume key (``rootfs``, ``mpN``) a write would send to a guest whose live
    config has ``protection: 1``; empty when it is not protected. Pure."""
    if not protected(live):
        return []
    return [
        f"{key}: {WORDS.label} {vmid} has protection: 1, and PVE refuses to change its volumes "
        f"(`can't update {WORDS.label} {vmid} drive '{key}' - protection mode enabled`). Clear protection "
        "in a run of its own first (declare protection: 0, apply, then declare this change), or run "
        f"`{WORDS.command} set` on the node."
        for key in keys
        if key == "rootfs" or key.startswith("mp")
    ]


def _sys_modify_refusal(who: str) -> str:
    return (
        f"a privileged container (unprivileged: false) is created only by a caller with Sys.Modify on / "
        f"(pve-container API2/LXC.pm create_vm, PVE 9), and {who} does not hold it. Declare unprivileged: "
        "true, or grant the provision token Sys.Modify on /."
    )


def privileged_create_check(ctx: PveContext) -> tuple[list[str], list[str]]:
    """At plan, for a privileged create on PVE 9: (refusals, notes), by
    ``guest.refusals.provision_privilege_check``; when the token is not known the apply checks its
    own privileges (``check_own_sys_modify``). Raises PveMalformed, PveUnreachable."""
    return provision_privilege_check(
        ctx,
        *PRIVILEGED_CT,
        "needed for a privileged create on PVE 9",
        _sys_modify_refusal,
        "is checked by the apply before the create is sent",
    )


def check_own_sys_modify(ctx: PveContext, credential: Credential) -> None:
    """At apply, right before a privileged create on PVE 9: the minted provision credential's own
    privileges on ``/``. Raises Refused when it lacks Sys.Modify (nothing is sent), PveError,
    PveMalformed."""
    privilege, path = PRIVILEGED_CT
    if privilege not in held_privileges(ctx, credential, path):
        raise Refused(_sys_modify_refusal("the provision credential"))
