"""Plan and apply of ``proxmox_snippet.present``/``absent`` (docs/design.md §5f).

One decision (``decide``) serves plan and apply: where the snippet goes (``snippet.place``, each
refusal with its remedy), the file as it is (``snippet.disk.read``), and what to write. A snippet is
compared by the sha256 of its bytes and its mode; a return shows its volid, size and hashes, never its
content (cloud-init user data may hold secrets). Ownership rows are ``<target>/snippet/<volid>``,
keeping the hash, size and mode written:

- a file that exists and has no row is refused unless ``adopt: true`` (its content would be replaced);
- ``absent`` with ``removal: retain`` (default) forgets the row; ``removal: destroy`` deletes the file
  only when the row says it is ours and it still has the hash we wrote, and never while a guest names
  it: a VM's ``cicustom`` (qemu-server ``QemuServer.pm`` ``$cicustom_fmt``: ``user``, ``network``,
  ``meta``, ``vendor`` volids) or any guest's ``hookscript`` (pve-guest-common ``GuestHelpers.pm``
  ``exec_hookscript`` runs it at every start and stop), read from every guest's config.

The apply reads the file again right before the write: a file changed since the decision stops it,
nothing written. The write itself is ``disk.write`` (atomic rename), then read back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from salt_proxmox.access import privileges
from salt_proxmox.errors import DeclarationError, SaltProxmoxError
from salt_proxmox.guest.absence import guest_configs
from salt_proxmox.outcome import Outcome, forget_ownership, record_ownership
from salt_proxmox.ownership.rows import destroy_path, removal_problem
from salt_proxmox.run.context import PveContext
from salt_proxmox.simple.spec import expect, remember
from salt_proxmox.snippet import disk
from salt_proxmox.snippet.declare import FAMILY, Snippet, declare, identify, snippet_volids
from salt_proxmox.snippet.place import Place, place

#: The guest keys that name snippets.
NAMING = ("cicustom", "hookscript")


@dataclass
class Decision:
    """``action``: ``noop``, ``write``, ``record`` (as declared, only the row to write) or ``refuse``."""

    action: str
    place: Place | None = None
    live: disk.OnDisk | None = None
    changes: dict = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def where(snippet: Snippet) -> str:
    """The pillar entry declaring ``snippet``."""
    return f"proxmox:snippets:{snippet.storage}:{snippet.file}"


def _short(digest: str | None) -> str:
    return digest[:12] if digest else "none"


def _changes(snippet: Snippet, live: disk.OnDisk | None) -> dict:
    changes: dict = {"created": {"old": None, "new": snippet.volid}} if live is None else {}
    if live is None or live.sha256 != snippet.sha256:
        changes["sha256"] = {"old": live.sha256 if live else None, "new": snippet.sha256}
    if live is None or live.size != snippet.size:
        changes["size"] = {"old": live.size if live else None, "new": snippet.size}
    if live is None or live.mode != snippet.mode:
        changes["mode"] = {"old": oct(live.mode) if live else None, "new": oct(snippet.mode)}
    return changes


def decide(ctx: PveContext, snippet: Snippet) -> Decision:
    """The one decision of ``present`` (module docstring). Raises what the reads raise (PveError,
    PveMalformed, PveUnreachable, CredentialError, SnippetUnreadable): never absence."""
    found, refusals = place(ctx, snippet, where(snippet))
    if found is None:
        return Decision("refuse", reasons=refusals)
    notes = [note for note in (found.note(snippet),) if note]
    live = None if found.created else disk.read(found.path, found.directory, snippet.file)
    row = ctx.ownership.row(snippet.key)
    if live is not None and row is None and not snippet.adopt:
        return Decision("refuse", found, live, reasons=[
            f"{snippet.label} exists on node {found.node} and this minion did not write it (sha256 "
            f"{_short(live.sha256)}, {live.size} bytes). Nothing is taken over silently: declare adopt: true "
            "to manage it (its content becomes the declared one)."
        ])  # fmt: skip
    remember(ctx, FAMILY, snippet.volid, {"node": found.node, "shared": found.shared, "mode": snippet.mode})
    changes = _changes(snippet, live)
    if live is None:
        expect(ctx, FAMILY, snippet.volid)
    if changes:
        return Decision("write", found, live, changes, notes=notes)
    if row is None or row.get("phase") != "owned" or row.get("declared") != snippet.stored():
        return Decision("record", found, live, notes=notes)
    return Decision("noop", found, live, notes=notes)


def _failed(outcome: Outcome, snippet: Snippet, exc: Exception, wrote: str) -> Outcome:
    return outcome.fail(f"{snippet.label}: {exc}", wrote)


def present(
    ctx: PveContext,
    test: bool,
    state_id: str,
    /,
    name: object = None,
    storage: object = None,
    content: object = None,
    executable: object = False,
    adopt: object = False,
    **extra: object,
) -> Outcome:
    """Plan (``test``) or apply one snippet; never raises for a known failure. Changes: ``created``,
    ``sha256``, ``size`` and ``mode`` (each ``{old, new}``), or ``ownership`` when only the row is
    written."""
    privileges.planning(ctx, test)
    outcome = Outcome()
    try:
        snippet = declare(state_id, ctx.target.name, name, storage, content, executable, adopt, **extra)
        decision = decide(ctx, snippet)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    except SaltProxmoxError as exc:
        return outcome.fail(f"{state_id}: {exc}", "Nothing was written.")
    outcome.comment.extend(decision.notes)
    if decision.action == "refuse":
        return outcome.fail(*decision.reasons, "Nothing was written.")
    found = decision.place
    assert found is not None
    if decision.action == "noop":
        outcome.comment.append(f"{snippet.label} is as declared (sha256 {_short(snippet.sha256)})")
        return outcome
    if decision.action == "record":
        return record_ownership(
            outcome, ctx.ownership, snippet.key, state_id, snippet.stored(), snippet.label, test
        )
    outcome.changes.update(decision.changes)
    said = (
        f"{snippet.label} ({snippet.size} bytes, sha256 {_short(snippet.sha256)}, mode {oct(snippet.mode)}): "
        f"would write via root lane ({found.via}) to {found.directory}"
    )
    if test:
        outcome.result = None
        outcome.comment.append(said)
        return outcome
    return _write(ctx, snippet, decision, outcome)


def _write(ctx: PveContext, snippet: Snippet, decision: Decision, outcome: Outcome) -> Outcome:
    """The apply of a ``write`` decision: the file read again (it must be as decided), written, read back."""
    found = decision.place
    assert found is not None
    try:
        now = disk.read(found.path, found.directory, snippet.file)
        if now != decision.live:
            return outcome.fail(
                f"{snippet.label} changed on node {found.node} after it was read for this decision. Nothing "
                "was written: run again to decide on it as it is now."
            )
        if ctx.ownership.row(snippet.key) is None:
            ctx.ownership.mark_creating(snippet.key, snippet.state_id, snippet.stored())
        disk.write(found.directory, snippet.file, snippet.data, snippet.mode)
        after = disk.read(found.path, found.directory, snippet.file)
    except SaltProxmoxError as exc:
        return _failed(
            outcome, snippet, exc, "The file on the node is the old one or the new one, never a mix."
        )
    if after is None or (after.sha256, after.mode) != (snippet.sha256, snippet.mode):
        return outcome.fail(f"{snippet.label}: read back after the write, it is not as declared: run again.")
    ctx.ownership.mark_owned(snippet.key, snippet.state_id, snippet.stored())
    outcome.comment.append(f"{snippet.label} written via root lane ({found.via}) to {found.directory}")
    return outcome


def users(ctx: PveContext, volid: str) -> list[str]:
    """``<CT|VM> <vmid> <key>`` for each guest of the cluster whose config names ``volid`` in a
    ``NAMING`` key. Raises what the reads raise."""
    found = []
    for row, config in guest_configs(ctx):
        for key in NAMING:
            # PVE's config read shows pending values merged in (unless current=1): those count too.
            if volid in snippet_volids(key, config.get(key)):
                found.append(f"{'CT' if row['type'] == 'lxc' else 'VM'} {row['vmid']} {key}")
    return found


def absent(
    ctx: PveContext,
    test: bool,
    state_id: str,
    /,
    name: object = None,
    storage: object = None,
    removal: object = "retain",
    **extra: object,
) -> Outcome:
    """Stop managing a snippet: ``removal: retain`` (default) forgets its row and touches nothing;
    ``removal: destroy`` deletes the file when the row says it is ours, it still has the hash we wrote
    and no guest names it (module docstring). Never raises for a known failure."""
    outcome = Outcome()
    try:
        problem = removal_problem(removal)
        if problem:
            raise DeclarationError(problem)
        snippet = identify(state_id, ctx.target.name, name, storage, **extra)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    row = ctx.ownership.row(snippet.key)
    if removal == "retain":
        return forget_ownership(outcome, ctx.ownership, snippet.key, row, snippet.label, test)
    privileges.planning(ctx, test)
    try:
        found, refusals = place(ctx, snippet, where(snippet))
        if found is None:
            return outcome.fail(*refusals, "Nothing was deleted.")
        live = disk.read(found.path, found.directory, snippet.file)
        if live is None:
            return forget_ownership(outcome, ctx.ownership, snippet.key, row, snippet.label, test, True)
        if row is None:
            return outcome.fail(destroy_path(snippet.label))
        if live.sha256 != (row.get("declared") or {}).get("sha256"):
            return outcome.fail(
                f"destroy {snippet.label}: its content is no longer what this minion wrote (sha256 "
                f"{_short(live.sha256)}), so somebody changed it. Nothing was deleted: delete it by hand if "
                "it should go."
            )
        named = users(ctx, snippet.volid)
        if named:
            return outcome.fail(
                f"destroy {snippet.label}: {', '.join(named)} name(s) it, and PVE reads it at the guest's "
                "next start (cloud-init's cicustom, a hookscript). Nothing was deleted: point the guests "
                "elsewhere first."
            )
        outcome.changes = {"deleted": {"old": snippet.volid, "new": None}}
        if test:
            outcome.result = None
            outcome.comment.append(
                f"{snippet.label}: would delete {found.directory}/{snippet.file} on node {found.node}"
            )
            return outcome
        if disk.read(found.path, found.directory, snippet.file) != live:
            outcome.changes = {}
            return outcome.fail(
                f"{snippet.label} changed after it was read for this decision. Nothing was deleted."
            )
        disk.remove(found.directory, snippet.file)
    except SaltProxmoxError as exc:
        return outcome.fail(f"{state_id}: {exc}", "Nothing was deleted.")
    ctx.ownership.forget(snippet.key)
    outcome.comment.append(f"{snippet.label} deleted on node {found.node}")
    return outcome


def declared_keys(chunk, default_target: str | None) -> frozenset[str]:
    """The ownership row key a ``present``/``absent`` chunk declares (the one-object-one-state check),
    or none when its names cannot be read (it is refused when it runs)."""
    target = chunk.target(default_target)
    if target is None:
        return frozenset()
    try:
        return frozenset({identify("", target, chunk.name, chunk.args.get("storage")).key})
    except DeclarationError:
        return frozenset()
