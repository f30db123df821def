"""The export of downloaded files (``registry`` ``Kind.export``): none, and a note saying why."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from salt_proxmox.run.context import PveContext

#: Why downloaded files are never exported (``export``).
NOT_EXPORTED = (
    "PVE keeps no source of a stored file (pve-storage API2/Storage/Content.pm index lists volid, size and "
    "format, no URL or checksum), so an export could not declare where it comes from"
)


def export(ctx: PveContext, bao: object, keep) -> object:
    """``proxmox.export`` of downloaded files: none, and the note ``NOT_EXPORTED``."""
    from salt_proxmox.export.objects import Found

    return Found(notes=[f"downloaded files are not exported: {NOT_EXPORTED}"])


export.not_exported = NOT_EXPORTED  # type: ignore[attr-defined]
