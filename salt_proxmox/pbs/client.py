"""The Proxmox Backup Server HTTP client and its targets (``proxmox:pbs_targets:<name>``).

A PBS target is configured as a PVE one is (``salt_proxmox.pve.client.parse_target``): ``members``
(https URLs; PBS's API listens on port 8007, which a member naming no port gets), ``verify``,
``timeout``, and ``credentials`` per role (``read``, ``provision``) from OpenBao or static, exactly as
``salt_proxmox.openbao.creds`` hands them out, here PBS API tokens ``user@realm!name``. The client is
the PVE client (one session, member failover, the uncertain-write rules) with PBS's two differences:

- the token goes as ``Authorization: PBSAPIToken=<user@realm!name>:<secret>`` (proxmox-backup
  ``src/server/auth.rs`` ``extract_auth_data``; PVE's is ``PVEAPIToken=<id>=<secret>``);
- an error's message is the answer's plain body, not a JSON member (proxmox-rest-server
  ``formatter.rs`` ``format_error``: the status, and ``err.to_string()`` as the body).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

import requests

from salt_proxmox.pve.client import Credential, PveClient, Target, parse_target
from salt_proxmox.pve.client import _decode as pve_decode

#: Where PBS targets are configured.
PBS_TARGETS = "proxmox:pbs_targets"
#: proxmox-backup ``src/bin/proxmox-backup-proxy.rs``: the API and GUI listen on 8007.
PBS_PORT = 8007
#: The longest error body quoted (a proxy's HTML page is not a message).
_MESSAGE_LIMIT = 500


def parse_pbs_target(name: str, raw: object) -> Target:
    """Check one ``proxmox:pbs_targets`` entry (``parse_target``'s rules, named under this section); a
    member naming no port gets PBS's 8007. Raises DeclarationError naming the key."""
    if isinstance(raw, Mapping) and isinstance(raw.get("members"), list | str):
        members = raw["members"] if isinstance(raw["members"], list) else [raw["members"]]
        raw = {**raw, "members": [_with_port(member) for member in members]}
    return parse_target(name, raw, section=PBS_TARGETS, product="PBS", port=PBS_PORT)


def _with_port(member: object) -> object:
    if not isinstance(member, str) or not member.startswith("https://"):
        return member
    parts = urlsplit(member)
    return member if parts.port else f"https://{parts.hostname}:{PBS_PORT}{parts.path}"


class PbsClient(PveClient):
    """Calls one PBS target's API (``/api2/json/``); ``request`` returns the answer's ``data`` (with
    ``envelope``, the whole answer: PBS puts a config's ``digest`` beside ``data``)."""

    def authorization(self, credential: Credential) -> str:
        """``PBSAPIToken=<token_id>:<secret>``."""
        return f"PBSAPIToken={credential.token_id}:{credential.secret}"

    def decode(
        self, method: str, path: str, response: requests.Response, member: str, envelope: bool
    ) -> object:
        """PVE's decoding, with an error's plain body as its message."""
        if response.status_code >= 400 and not 300 <= response.status_code < 400:
            text = (response.text or "").strip()
            if text and not text.startswith(("{", "<")):
                response.reason = text.splitlines()[0][:_MESSAGE_LIMIT]
        return pve_decode(method, path, response, member, envelope)
