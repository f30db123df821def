"""The ad-hoc read of a snippet (``proxmox.snippet_get``, ``registry`` ``Kind.get``) and its export:
what the ``proxmox_snippet`` state compares, never its content, never a write."""

from __future__ import annotations

from typing import TYPE_CHECKING

from salt_proxmox.errors import Refused
from salt_proxmox.snippet import disk
from salt_proxmox.snippet.declare import identify
from salt_proxmox.snippet.lifecycle import where
from salt_proxmox.snippet.place import place

if TYPE_CHECKING:
    from salt_proxmox.run.context import PveContext


def get(ctx: PveContext, name: object = None, storage: object = None) -> dict | None:
    """``{volid, node, sha256, size, mode}`` of snippet ``name`` on ``storage`` as the root lane's node
    has it, or None when it is proven absent. Raises DeclarationError for a bad name or storage id,
    Refused when there is no lane or the storage cannot hold snippets, SnippetUnreadable and what the
    reads raise otherwise."""
    snippet = identify("adhoc", ctx.target.name, name, storage)
    found, refusals = place(ctx, snippet, where(snippet))
    if found is None:
        raise Refused(refusals)
    live = disk.read(found.path, found.directory, snippet.file)
    if live is None:
        return None
    return {
        "volid": snippet.volid,
        "node": found.node,
        "sha256": live.sha256,
        "size": live.size,
        "mode": oct(live.mode),
    }


#: Why snippets are never exported (``export``).
NOT_EXPORTED = (
    "their content (cloud-init user data, hook scripts) may hold secrets, and an export is pillar text: "
    "declare each snippet's content where its secrets are kept"
)


def export(ctx: PveContext, bao: object, keep) -> object:
    """``proxmox.export`` of snippets (the registry's ``Kind.export``): none, and a note saying why
    (``NOT_EXPORTED``, also the function's ``not_exported``, as an ``ObjectSpec`` says it)."""
    from salt_proxmox.export.objects import Found

    return Found(notes=[f"snippets are not exported: {NOT_EXPORTED}"])


export.not_exported = NOT_EXPORTED  # type: ignore[attr-defined]
