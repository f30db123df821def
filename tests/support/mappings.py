"""A FakePve that keeps resource mappings (``/cluster/mapping/{pci,usb,dir}``), as pve-manager does.

fakepve 0.5.0 checks these requests against PVE 9's schema and permissions, then answers them with a
generic handler that stores nothing. ``MappingPve`` adds stateful routes in front of it (the ``_routes_*``
mechanism), written from pve-manager 9.x ``PVE/API2/Cluster/Mapping/{PCI,USB,Dir}.pm`` over
pve-guest-common ``src/PVE/Mapping/{PCI,USB,Dir}.pm`` and pve-common ``SectionConfig.pm``:

- ``mappings``: ``{kind: {id: section}}``, each section ``{type, description?, map: [entries as sent],
  mdev?, live-migration-capable?}``, flags as numbers (``check_value``: ``$value + 0``);
- ``GET /cluster/mapping/<kind>`` is ``index``: each section the caller holds Mapping.Audit, Use or Modify
  on ``/mapping/<kind>/<id>`` for, with ``id`` and the file's ``digest``; ``GET …/{id}`` is ``get`` (the
  section and the digest) or 500 ``mapping '<id>' not found``;
- ``POST /cluster/mapping/<kind>`` is ``create``: ``<kind> ID '<id>' already defined``; a ``dir`` map
  naming a node twice: ``Node '<node>' is specified <n> times.`` (``assert_valid_map_list``);
- ``PUT …/{id}`` is ``update``: the digest (``assert_if_modified``), ``<kind> ID '<id>' does not exist``,
  then ``delete`` (``delete_from_config``: ``unable to delete required option 'map'``, ``cannot set and
  delete property '<key>' at the same time!``);
- ``DELETE …/{id}`` is ``delete``: the section goes, and a missing one is no error.
- ``release_version`` 8.x with ``version`` below 8.3.6: ``/cluster/mapping/dir`` answers 501 ``Method
  '<method> /cluster/mapping/dir' not implemented``, as a pve-manager without ``Mapping/Dir.pm`` does.

Differences from PVE: no hardware is checked (``check-node``'s ``checks`` come back empty, the local
node's directory is not looked at on a dir write); the error texts are the die messages without the
cfs lock's ``create hardware mapping failed:`` prefix; the digest is one hash of the kind's sections.
"""

from __future__ import annotations

import hashlib
import json

from fakepve.model import PveError
from fakepve.routing import check_digest, die, split_list

from tests.support.ceph import CephPve

KINDS = ("pci", "usb", "dir")
#: Each kind's section options (``options``) besides ``map``.
OPTIONS = {
    "pci": {"description", "mdev", "live-migration-capable"},
    "usb": {"description"},
    "dir": {"description"},
}
FLAGS = {"mdev", "live-migration-capable"}


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in str(text).split(".") if part.isdigit())


class MappingPve(CephPve):
    """CephPve with stateful resource mappings (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.mappings: dict[str, dict[str, dict]] = {kind: {} for kind in KINDS}

    # ---------------------------------------------------------------------------------- scenarios

    def add_mapping(self, kind: str, mapping_id: str, map: list[str], **options) -> dict:
        """A mapping made outside this product (by hand in the GUI), ``options`` as stored."""
        self.mappings[kind][mapping_id] = {"type": kind, "map": list(map), **options}
        return self.mappings[kind][mapping_id]

    def mapping_digest(self, kind: str) -> str:
        text = json.dumps(self.mappings[kind], sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()  # noqa: S324 - as PVE's SectionConfig digest

    # ------------------------------------------------------------------------------------- routes

    def _routes_mappings(self):
        routes = []
        for kind in KINDS:
            base, one = f"/cluster/mapping/{kind}", f"/cluster/mapping/{kind}/{{id}}"
            routes += [
                ("GET", base, self._mapping_handler(kind, self._mapping_index)),
                ("POST", base, self._mapping_handler(kind, self._mapping_create)),
                ("GET", one, self._mapping_handler(kind, self._mapping_read)),
                ("PUT", one, self._mapping_handler(kind, self._mapping_update)),
                ("DELETE", one, self._mapping_handler(kind, self._mapping_delete)),
            ]
        return routes

    def _mapping_handler(self, kind, handler):
        async def serve(v, user):
            if (
                kind == "dir"
                and str(self.release_version).startswith("8.")
                and _version(self.version) < (8, 3, 6)
            ):
                raise PveError(501, "Method '/cluster/mapping/dir' not implemented")
            return await handler(kind, v, user)

        return serve

    async def _mapping_index(self, kind, v, user):
        rows = []
        for mid, section in sorted(self.mappings[kind].items()):
            path = f"/mapping/{kind}/{mid}"
            if not any(
                self.allowed(user, path, priv) for priv in ("Mapping.Modify", "Mapping.Use", "Mapping.Audit")
            ):
                continue
            row = {**section, "id": mid, "digest": self.mapping_digest(kind)}
            if v.get("check-node"):
                row["errors" if kind == "usb" else "checks"] = []
            rows.append(row)
        return rows

    async def _mapping_read(self, kind, v, user):
        section = self.mappings[kind].get(v["id"])
        if section is None:
            raise die(f"mapping '{v['id']}' not found")
        return {**section, "digest": self.mapping_digest(kind)}

    @staticmethod
    def _mapping_checked(kind: str, param: dict) -> dict:
        settings = {}
        for key, value in param.items():
            if key == "map":
                settings["map"] = [value] if isinstance(value, str) else list(value)
            elif key in OPTIONS[kind]:
                settings[key] = int(value) if key in FLAGS else value
            else:
                raise die(f"unexpected property '{key}'")
        if kind == "dir" and "map" in settings:
            nodes = [
                dict(part.split("=", 1) for part in entry.split(",") if "=" in part).get("node")
                for entry in settings["map"]
            ]
            for node in sorted({node for node in nodes if nodes.count(node) > 1}):
                raise die(f"Node '{node}' is specified {nodes.count(node)} times.")
        return settings

    async def _mapping_create(self, kind, v, user):
        param = {key: value for key, value in v.items() if value is not None}
        mid = param.pop("id")
        settings = self._mapping_checked(kind, param)
        if mid in self.mappings[kind]:
            raise die(f"{kind} ID '{mid}' already defined")
        self.mappings[kind][mid] = {"type": kind, **settings}
        return None

    async def _mapping_update(self, kind, v, user):
        param = {key: value for key, value in v.items() if value is not None}
        mid = param.pop("id")
        digest = param.pop("digest", None)
        delete = split_list(param.pop("delete", ""))
        check_digest(self.mapping_digest(kind), digest)
        section = self.mappings[kind].get(mid)
        if section is None:
            raise die(f"{kind} ID '{mid}' does not exist")
        settings = self._mapping_checked(kind, param)
        data = {**section}
        for key in delete:
            if key == "map":
                raise die("unable to delete required option 'map'")
            if key not in OPTIONS[kind]:
                raise die(f"no such option '{key}'")
            if key in settings:
                raise die(f"cannot set and delete property '{key}' at the same time!")
            data.pop(key, None)
        data.update(settings)
        self.mappings[kind][mid] = data
        return None

    async def _mapping_delete(self, kind, v, user):
        self.mappings[kind].pop(v["id"], None)
        return None
