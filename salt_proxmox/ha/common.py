"""What the HA families share: their ids, their reads and writes of pve-ha-manager's section
configs, and the release that holds each.

Source: pve-ha-manager ``src/PVE/API2/HA/{Resources,Groups,Rules}.pm`` and ``src/PVE/HA/Config.pm``.

- Privileges (each method's ``permissions``): every read Sys.Audit on ``/``; every create, update
  and delete Sys.Console on ``/`` (the ``provision`` token needs it; no Sys.Modify).
- Each object is one section of a config file under ``/etc/pve/ha/``; a read answers it with the
  file's ``digest``, and an update takes that digest (``PVE::SectionConfig::assert_if_modified``):
  a change made between the plan's read and the write is refused by PVE, never overwritten.
- PVE 9 migrated HA groups to HA rules (``HA/Config.pm`` ``have_groups_been_migrated``): there,
  every group method dies ``cannot index groups: ha groups have been migrated to rules`` (HTTP
  500, never an empty list) and a resource's ``group`` is refused (``invalid parameter 'group': ha
  groups have been migrated to rules``); PVE 8 has no ``/cluster/ha/rules``. So a group on 9 and
  a rule on 8 are refused at plan naming the other (``release_refusal``), with the release read
  once per run (``facts.release``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from salt_proxmox.errors import Refused
from salt_proxmox.guest.ha_owned import SID
from salt_proxmox.pve.facts import release
from salt_proxmox.simple.fields import Field
from salt_proxmox.simple.spec import Declared
from salt_proxmox.wire.propstring import text_problem

#: ``pve-configid`` (pve-common ``JSONSchema.pm`` ``pve_verify_configid``): an HA group's or rule's id.
CONFIG_ID = re.compile(r"^[a-z][a-z0-9_\-]+$", re.IGNORECASE | re.ASCII)
#: A node with its optional priority (``HA/Groups.pm``/``Rules/NodeAffinity.pm`` ``nodes``:
#: ``<node>[:<pri>]``, pve-common ``pve-ha-group-node``).
NODE_PRIORITY = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?(:\d+)?$", re.ASCII)


def check_nodes(value: str) -> str | None:
    """None when every item of a canonical ``nodes`` set is ``<node>[:<priority>]``."""
    bad = [item for item in value.split(",") if not NODE_PRIORITY.match(item)]
    return f"{', '.join(bad)}: not <node>[:<priority>]" if bad else None


def check_sids(value: str) -> str | None:
    """None when every item of a canonical ``resources`` set is ``vm:<vmid>``/``ct:<vmid>``."""
    bad = [item for item in value.split(",") if not SID.match(item)]
    return f"{', '.join(bad)}: not vm:<vmid> or ct:<vmid>" if bad else None


def check_comment(value: str) -> str | None:
    """One line of text (``HA/Resources.pm`` ``comment``: ``maxLength 4096``)."""
    return text_problem(value) or ("longer than 4096 characters" if len(value) > 4096 else None)


COMMENT = Field("text", check=check_comment)
NODES = Field("set", separator=",", check=check_nodes)


def digest_guard(ctx, credential, decl: Declared, live: Mapping[str, object]) -> dict:
    """The digest of the section config judged (``assert_if_modified`` checks it)."""
    digest = live.get("digest")
    return {"digest": str(digest)} if isinstance(digest, str) and digest else {}


def release_refusal(ctx, decl: Declared, wants: int) -> None:
    """Raise Refused when the cluster's release (``facts.release``) is not PVE ``wants`` for an
    object of that release only: a group (8) on 9, a rule (9) on 8, naming the other."""
    found = release(ctx)
    if found.major == wants:
        return
    if wants == 8:
        raise Refused(
            f"{decl.label}: the cluster runs PVE {found.release}, which migrated HA groups to HA rules "
            "(pve-ha-manager API2/HA/Groups.pm: `cannot index groups: ha groups have been migrated to "
            "rules`). Declare a node-affinity rule under proxmox:ha_rules instead. Nothing was written."
        )
    raise Refused(
        f"{decl.label}: the cluster runs PVE {found.release}, which has no HA rules (they came with PVE "
        "9, pve-ha-manager API2/HA/Rules.pm). Declare an HA group under proxmox:ha_groups instead, or "
        "upgrade the cluster. Nothing was written."
    )
