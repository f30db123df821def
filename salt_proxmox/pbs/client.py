"""The Proxmox Backup Server HTTP client and its targets (``proxmox:pbs_targets:<name>``).

A PBS target is configured as a PVE one is (``salt_proxmox.pve.client.parse_target``): ``members``
(https URLs; PBS's API listens on port 8007, which a member naming no port gets), ``verify``,
``timeout``, and ``credentials`` per role (``read``, ``provision``) from OpenBao or static, exactly as
``salt_proxmox.openbao.creds`` hands them out, here PBS API tokens ``user@realm!name``. The client is
the PVE client (one session, member failover, the uncertain-write rules) with PBS's two differences:

- the token goes as ``Authorization: PBSAPIToken=<user@realm!name>:<secret>`` (proxmox-backup
  ``src/server/auth.rs`` ``extract_auth_data``; PVE's is ``PVEAPIToken=<id>=<secret>``);
- an error's message is the answer's plain body, not a JSON member (proxmox-rest-server
  ``formatter.rs`` ``format_error``: the status, and ``err.to_string()`` as the body);
- an error's remedy names PBS's own tools (``PbsApiError``, ``remedy``): a 400 is any error of the API
  handler (``format_error`` answers BAD_REQUEST for an error that is no ``HttpError``), not a schema
  refusal; 401 and 403 are fixed with ``proxmox-backup-manager`` (docs ``user-management.rst``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlsplit

import requests

from salt_proxmox.pve.client import Credential, PveClient, Target, parse_target
from salt_proxmox.pve.client import _decode as pve_decode
from salt_proxmox.pve.errors import PveError, Words
from salt_proxmox.pve.errors import remedy as pve_remedy

#: Where PBS targets are configured.
PBS_TARGETS = "proxmox:pbs_targets"
#: proxmox-backup ``src/bin/proxmox-backup-proxy.rs``: the API and GUI listen on 8007.
PBS_PORT = 8007
#: The longest error body quoted (a proxy's HTML page is not a message).
_MESSAGE_LIMIT = 500


#: PVE's wordings whose remedy holds for PBS as written (``pve.errors.remedy``): the digest check of
#: ``update_datastore``/``delete_datastore`` (``detect_modified_configuration_file``) and
#: ``create_datastore``'s ``datastore '<name>' already exists.``
_SHARED_WORDINGS = re.compile(r"detected modified configuration|already exists")


def remedy(status: int, message: str, path: str = "") -> str:
    """What to do about a PBS answer of HTTP ``status`` with ``message``, in PBS's own tools."""
    if _SHARED_WORDINGS.search(message):
        return pve_remedy(status, message, path)
    if status == 401:
        return (
            "PBS did not accept the API token (deleted, disabled, expired or a wrong secret): make a new one "
            "(`proxmox-backup-manager user generate-token <user@realm> <name>`) and publish it where this "
            "target's credentials come from (OpenBao or the static config)."
        )
    if status == 403:
        return (
            "PBS refused the privilege the call needs: grant the token a role on that path "
            "(`proxmox-backup-manager acl update <path> <role> --auth-id '<user@realm!token>'`), or "
            "declare less."
        )
    if status == 400:
        return (
            "PBS refused the call for the reason it gives: correct what it names, then run the state again."
        )
    if status in (502, 503, 504):
        return (
            "A proxy in front of PBS, or the API on the member, failed to answer: check the proxy and "
            "`systemctl status proxmox-backup-proxy proxmox-backup` on the member, then run the state again."
        )
    if status >= 500:
        return (
            "PBS failed on its side: read its journal (`journalctl -u proxmox-backup-proxy -u "
            "proxmox-backup`), then run the state again."
        )
    return "Check the request PBS names, then run the state again."


class PbsApiError(PveError):
    """An HTTP answer of PBS that is not success: ``PveError``'s fields, PBS's remedy (``remedy``)."""

    @staticmethod
    def remedy_for(status: int, message: str, path: str) -> str:
        """PBS's remedy."""
        return remedy(status, message, path)


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


#: PBS's words: its API server (proxmox-backup ``src/bin/proxmox-backup-proxy.rs``, port 8007) and
#: ``proxmox-backup-manager task list|log`` (``src/bin/proxmox_backup_manager``, docs ``command-syntax``).
PBS_WORDS = Words(
    product="PBS",
    reach="that proxmox-backup-proxy runs on them (`systemctl status proxmox-backup-proxy`)",
    api="a PBS server's proxmox-backup-proxy (port 8007) and not a proxy or portal page",
    tasks="PBS's task list (`proxmox-backup-manager task list --all`)",
    task_log="`proxmox-backup-manager task log {upid}`",
)


class PbsClient(PveClient):
    """Calls one PBS target's API (``/api2/json/``); ``request`` returns the answer's ``data`` (with
    ``envelope``, the whole answer: PBS puts a config's ``digest`` beside ``data``). Its sentences
    name PBS's tools (``PBS_WORDS``)."""

    words = PBS_WORDS

    def authorization(self, credential: Credential) -> str:
        """``PBSAPIToken=<token_id>:<secret>``."""
        return f"PBSAPIToken={credential.token_id}:{credential.secret}"

    def decode(
        self, method: str, path: str, response: requests.Response, member: str, envelope: bool
    ) -> object:
        """PVE's decoding, with an error's plain body as its message; raises PbsApiError for an HTTP
        failure (PVE's other errors as ``pve_decode`` raises them)."""
        if response.status_code >= 400 and not 300 <= response.status_code < 400:
            text = (response.text or "").strip()
            if text and not text.startswith(("{", "<")):
                response.reason = text.splitlines()[0][:_MESSAGE_LIMIT]
        try:
            return pve_decode(method, path, response, member, envelope, self.words)
        except PveError as error:
            raise PbsApiError(error.method, error.path, error.status, error.message, error.errors) from None
