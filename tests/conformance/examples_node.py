"""The conformance examples of the node-scoped families, merged into ``examples.EXAMPLES``: ``proxmox_node``'s
kinds, a node's certificate, and downloaded content (held per node on a storage that is not shared).

``proxmox_node``'s kinds (``node_dns``, ``node_hosts``, ``node_time`` and ``apt_repository``): a node
always has these settings, so each first write takes them over (``adopt: true``); the first three's delete
is ``ensure: absent`` without ``removal`` (forget: PVE deletes none of them, and ``removal: destroy`` is
refused, ``contract.KEPT``), the APT repositories' is ``removal: destroy`` (it disables what the last
declaration enabled)."""

from __future__ import annotations

import hashlib
from dataclasses import replace

from tests.conformance.shapes import Examples, _bad, _simple
from tests.support.certificates import issue

_DNS = {"name": "pve1", "search": "example.org", "dns1": "192.0.2.53", "dns2": "192.0.2.54", "adopt": True}
_HOSTS = {"name": "pve1", "entries": {"192.0.2.60": ["ci.example.org", "ci"]}, "adopt": True}
_TIME = {"name": "pve1", "timezone": "Europe/Vienna", "adopt": True}
# A node's APT repositories (pve-manager API2/APT.pm over proxmox-apt): the fake node's fresh install has
# the enterprise repository enabled (adopt: true takes it over); the examples add no-subscription and
# disable enterprise, then add test, then disable test; the destroy disables what was enabled.
_APT_OFF = {"path": "/etc/apt/sources.list.d/pve-enterprise.sources", "index": 0, "enabled": False}
_APT = {"name": "pve1", "adopt": True, "repositories": [{"handle": "no-subscription"}, _APT_OFF]}


def _node(kind: str, create: dict, update: dict, clear: dict, wrong: dict) -> Examples:
    return Examples(
        create=create,
        update={**create, **update},
        clear={**create, **clear},
        delete={"name": create["name"]},
        bad={
            **_bad(create, {"name": create["name"]}, kind, f"{kind}_absent"),
            "wrong type": (kind, {**create, **wrong}, next(iter(wrong))),
            # pve-manager PVE/API2/Nodes.pm: GET /nodes lists the cluster's nodes; PVE proxies to the node.
            "no such node": (kind, {**create, "name": "pve9"}, "name"),
        },
    )


def _node_kinds() -> dict[str, Examples]:
    """``{kind name: Examples}`` of ``proxmox_node``'s kinds."""
    dns = _node("dns", _DNS, {"dns2": "192.0.2.55"}, {"dns2": None}, {"dns1": 7})
    hosts = _node(
        "hosts",
        _HOSTS,
        {"entries": {"192.0.2.60": ["ci.example.org", "ci", "runner"]}},
        {"entries": {"192.0.2.60": None}},
        {"entries": "192.0.2.60 ci"},
    )
    time = _node("time", _TIME, {"timezone": "Europe/Berlin"}, {"timezone": "UTC"}, {"timezone": 7})
    gap = ("dns", {**_DNS, "dns2": None, "dns3": "192.0.2.9"}, "dns3")
    not_ip = ("hosts", {**_HOSTS, "entries": {"ci": ["x"]}}, "entries")
    no_zone = ("time", {**_TIME, "timezone": "Mars/Olympus"}, "timezone")
    return {
        "node_dns": replace(dns, bad={**dns.bad, "gap": gap}),
        "node_hosts": replace(hosts, bad={**hosts.bad, "not an address": not_ip}),
        "node_time": replace(time, bad={**time.bad, "no such zone": no_zone}),
        "apt_repository": Examples(
            create=_APT,
            update={"name": "pve1", "repositories": [*_APT["repositories"], {"handle": "test"}]},
            clear={
                "name": "pve1",
                "repositories": [*_APT["repositories"], {"handle": "test", "enabled": False}],
            },
            delete={"name": "pve1", "removal": "destroy"},
            bad={
                **_bad(_APT, {"name": "pve1"}, "apt_repository", "apt_repository_absent"),
                "wrong type": ("apt_repository", {**_APT, "repositories": "no-subscription"}, "repositories"),
            },
        ),
    }


#: ``{kind name: Examples}`` of ``proxmox_node``'s kinds, in the registry's order.
NODE_EXAMPLES = _node_kinds()

#: A custom certificate of node pve1 and the one replacing it, made when the suite runs (their keys only in
#: the suite's pillar, never committed); ``trusted``: the fake's CA bundle does not sign them.
_CERT, _CERT_KEY, _ = issue(["pve1.example.org"])
_CERT2, _CERT2_KEY, _ = issue(["pve1.example.org", "pve.example.org"])
_CERTIFICATE = {
    "name": "pve1",
    "type": "custom",
    "certificates": _CERT,
    "secrets_pillar": "conformance:certificate",
    "trusted": True,
}
#: The certificates' keys, under ``conformance`` in the suite's pillar (``examples.SECRETS_PILLAR``).
CERTIFICATE_SECRETS = {"certificate": {"key": _CERT_KEY}, "certificate_update": {"key": _CERT2_KEY}}
CERTIFICATE = _simple(
    _CERTIFICATE,
    {"certificates": _CERT2, "secrets_pillar": "conformance:certificate_update"},
    {"adopt": False},
    {"certificates": 7},
)

#: What each URL of the content examples serves (``contract.CLUSTER_FOR``: the fake's ``content_urls``):
#: an installer image, its next release compressed with zstd, and that release uncompressed.
CONTENT_URLS = {
    "https://cdimage.example.org/example-13.0.iso": b"an installer image, 13.0\n" * 64,
    "https://cdimage.example.org/example-13.1.iso.zst": b"(zstd) an installer image, 13.1\n" * 16,
    "https://cdimage.example.org/example-13.1.iso": b"an installer image, 13.1\n" * 64,
}


def _source(url: str) -> dict[str, str]:
    """``url`` and the sha256 checksum of what it serves."""
    return {
        "url": url,
        "checksum": hashlib.sha256(CONTENT_URLS[url]).hexdigest(),
        "checksum-algorithm": "sha256",
    }


_ISO_NAMES = {"name": "example-iso", "storage": "local", "content": "iso", "filename": "example-13.iso"}
_ISO = {**_ISO_NAMES, **_source("https://cdimage.example.org/example-13.0.iso")}
#: An ISO downloaded on each node (storage ``local`` is not shared). Its update is another source, which
#: PVE does not download over the file that is there (pve-common Tools.pm download_file_from_url:
#: checksum mismatch, aborting), so ``replace: true`` plans a delete and a download on each node; its
#: clear drops ``compression`` (PVE's default: the file stored as downloaded, pve-storage
#: API2/Storage/Status.pm download_url), so the image comes from its uncompressed URL.
_UPDATE = {**_ISO, **_source("https://cdimage.example.org/example-13.1.iso.zst"), "compression": "zst",
           "replace": True}  # fmt: skip
CONTENT = Examples(
    create=_ISO,
    update=_UPDATE,
    clear={**_UPDATE, **_source("https://cdimage.example.org/example-13.1.iso"), "compression": None},
    delete={**_ISO_NAMES, "removal": "destroy"},
    bad={
        **_bad(_ISO, _ISO_NAMES),
        "wrong type": ("present", {**_ISO, "nodes": 7}, "nodes"),
        # A download needs a checksum unless verify: false says it is taken unverified (declare.py).
        # (None: the key left unset, as a pillar entry's ``checksum: ~``.)
        "no checksum": ("present", {**_ISO, "checksum": None, "checksum-algorithm": None}, "checksum"),
    },
)
