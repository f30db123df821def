"""The export of an ``ObjectSpec`` family (``proxmox.export``): every object its listing holds, read as a
plan reads it (``simple.lifecycle.read``), declared with its canonical attributes and ``adopt: true``.

A family supplies two things on its ``ObjectSpec``: ``export_names`` (how a listing row names its
object) and, when its listing is not ``listing``, ``export_listings`` (one per node, per vnet). Its
``export_values`` drops what PVE shows that a declaration does not take; by default ``digest``, the
identity keys and empty values (an option PVE holds none of is not declared, so never compared) are
left out. Each declaration is checked with the family's own ``declare`` before it is exported: one
that would be refused is left out with a note saying why, never exported half-read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from salt_proxmox.errors import DeclarationError, SaltProxmoxError
from salt_proxmox.pve.listing import rows_of
from salt_proxmox.run.context import PveContext
from salt_proxmox.simple.lifecycle import read
from salt_proxmox.simple.spec import Call, ObjectSpec

#: Keys a live read holds that are never declared: the write guard's.
NEVER_DECLARED = ("digest",)

#: The state id the declarations are checked under (they are not run).
EXPORT = "export"


@dataclass
class Exported:
    """One object as pillar declares it: ``names`` (its identity keys, as ``identify`` takes them),
    ``declaration`` (the entry's keys, identity included, ``adopt: true``), ``label`` (``pool prod``),
    ``secrets``: the keys of its secrets left out (``ObjectSpec.export_secrets``), which
    ``export.pillar.export`` notes with the pillar path each goes to."""

    names: dict
    declaration: dict
    label: str
    secrets: tuple[str, ...] = ()


@dataclass
class Found:
    """What an export read: the objects, and the notes on what it left out and why."""

    objects: list[Exported] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def listings(ctx: PveContext, spec: ObjectSpec) -> list[tuple[Call, Mapping[str, object]]]:
    """The listings ``spec``'s objects are exported from: ``export_listings``, else its ``listing``.
    Raises LookupError for a family with neither."""
    if spec.export_listings is not None:
        return spec.export_listings(ctx)
    if spec.listing is None:
        raise LookupError(f"{spec.family}: no listing to export from (ObjectSpec.export_listings)")
    return [(spec.listing, {})]


def default_values(
    live: Mapping[str, object], names: Mapping[str, object], live_only: tuple[str, ...] = ()
) -> dict:
    """The canonical attributes a declaration takes by default: all but ``NEVER_DECLARED``, the
    spec's ``live_only`` keys, the identity keys and empty values."""
    return {
        key: value
        for key, value in live.items()
        if key not in NEVER_DECLARED
        and key not in live_only
        and key not in names
        and value not in (None, "", [])
    }


def export(ctx: PveContext, spec: ObjectSpec, keep=lambda names: True) -> Found:
    """Every object of ``spec``'s family the read credential can list, ``keep(names)`` true, as
    ``Exported``. Raises LookupError for a family without ``export_names``, and what the listing's
    read raises (PveError, PveMalformed, PveUnreachable, CredentialError): an export never
    leaves a family out silently."""
    if spec.export_names is None:
        raise LookupError(f"{spec.family}: no export (ObjectSpec.export_names)")
    found = Found()
    credential = spec.credential(ctx)
    for call, extra in listings(ctx, spec):
        rows = ctx.client.request("GET", call.path, credential, params=call.params)
        for row in rows_of(rows, spec.noun):
            named = spec.export_names(row)
            if named is None:
                continue
            names = {**extra, **named}
            if not keep(names):
                continue
            try:
                probe = spec.identify(EXPORT, ctx.target.name, **names)
                live = (
                    spec.export_read(ctx, probe)
                    if spec.export_read is not None
                    else read(ctx, spec, probe, shared=True)
                )
                if live is None:
                    continue
                values = (
                    dict(spec.export_values(live, probe))
                    if spec.export_values is not None
                    else default_values(live, names, spec.live_only)
                )
                declaration = {**names, **values, "adopt": True}
                spec.declare(EXPORT, ctx.target.name, **declaration)
            except DeclarationError as exc:
                found.notes.append(
                    f"{spec.noun} {names}: not exported, a declaration of it is refused: {exc}"
                )
                continue
            except SaltProxmoxError as exc:
                found.notes.append(f"{spec.noun} {names}: not exported, it cannot be read: {exc}")
                continue
            secrets = tuple(sorted(spec.export_secrets(live))) if spec.export_secrets is not None else ()
            found.objects.append(Exported(names, declaration, probe.label, secrets))
    return found
