"""Typed PVE API errors.

An HTTP answer keeps its status, PVE's message and per-field ``errors``. PVE's JSON formatter
(pve-http-server ``src/PVE/APIServer/Formatter/Standard.pm``) puts the message in the status
line and, for API2 JSON, in the body's ``message``; 400s add ``errors: {field: reason}``.
Nothing here ever holds a request header, so no credential can reach an error text.

Every error's text ends with what an operator does about it (``remedy``): a state comment is
read by someone who has to act on it, and "HTTP 500 got timeout" alone does not say how. A remedy
that runs a command names the guest family's own (``pct``/``qm``, ``ct:``/``vm:`` for
``ha-manager``), read from the request's path (``guest_tools``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from salt_proxmox.errors import SaltProxmoxError

#: pve-guest-common ``src/PVE/AbstractConfig.pm`` ``load_config``: the one answer that says a
#: guest config is missing (HTTP 500). Nothing else is "not found".
_MISSING_CONFIG = re.compile(
    r"^Configuration file '(nodes/[^/']+/(?:lxc|qemu-server)/\d+\.conf)' does not exist$"
)


#: PVE's own wordings that name their cause, each with the remedy (first match wins). Sources:
#: pve-cluster ``PVE::Cluster::check_cfs_quorum`` ("cluster not ready - no quorum?"),
#: pve-guest-common ``AbstractConfig::lock_config_full`` ("can't lock file ... - got timeout") and
#: ``check_lock`` ("CT is locked (backup)"), pve-container ``API2/LXC/Config.pm`` update_vm
#: (``assert_if_modified``: "detected modified configuration"), pve-container ``API2/LXC.pm``
#: create_vm (``check_vmid_unused``: "CT 150 already exists on node 'pve1'"); pve-container
#: ``API2/LXC.pm`` destroy_vm ("container is running", "used in HA resources", pve-guest-common
#: ``ReplicationConfig::check_for_existing_jobs``: "There is a replication job") and
#: ``AbstractConfig::check_protection`` ("protection mode enabled"), resize_vm ("unable to shrink disk size"),
#: ``LXC.pm check_ct_modify_config_perm`` ("only allowed for root@pam"; qemu-server ``API2/Qemu.pm``
#: ``$check_vm_modify_config_perm`` and its device checks: "only root can set '<key>' config for
#: real devices"), ``LXC/Config.pm
#: update_pct_config`` ("unable to delete required option"); pve-manager ``API2/Pool.pm``
#: ("is not empty", "parent ... of pool"); pve-access-control ``API2/ACL.pm`` update_acl ("role
#: ... does not exist", ``check_token_exist``: "no such token") and ``verify_privname`` ("invalid
#: privilege"); pve-network ``src/PVE/Network/SDN.pm`` ``lock_sdn_config`` ("invalid lock token
#: provided!": another client holds the global SDN lock, and every SDN write or commit without its
#: token is refused). PVE said why, so the remedy is about that, never "read the node's journal".
_WORDINGS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"no quorum"),
        "The cluster has no quorum, so /etc/pve is read-only: restore quorum (`pvecm status` on a "
        "node), then run the state again.",
    ),
    (
        re.compile(r"can't lock file"),
        "Another task holds the guest's config lock: wait for it to end (`pvesh get /nodes/<node>/tasks "
        "--vmid <vmid>`), then run the state again.",
    ),
    (
        re.compile(r"\bis locked \("),
        "The guest is locked by a backup, migration or snapshot: wait for it to end, or run `{cmd} unlock "
        "<vmid>` on the node if the lock is stale, then run the state again.",
    ),
    (
        re.compile(r"detected modified configuration|checksum mismatch"),
        "The config changed after it was read: plan again to judge the new config, then apply.",
    ),
    (
        re.compile(r"\b(?:CT|VM) \d+ already exists"),
        "Another guest took this vmid meanwhile: declare a free vmid, or declare adopt: true to take "
        "that guest over.",
    ),
    (
        re.compile(r"already exists"),
        "Something else created it after the plan read it: plan again, and declare adopt: true to take "
        "it over.",
    ),
    (
        re.compile(r"container is running|can't overwrite running container|is running - destroy failed"),
        "PVE does not destroy a running {noun}: stop it (`{cmd} shutdown <vmid>` on the node), then run "
        "the state again.",
    ),
    (
        re.compile(r"used in HA resources and purge parameter not set"),
        "The guest is an HA resource, and PVE destroys one only with purge, which is never sent: remove it "
        "from HA first (`ha-manager remove {ha}:<vmid>`), then run the state again.",
    ),
    (
        re.compile(r"There is a replication job '[^']*' for guest"),
        "A replication job still names the guest: remove it first (`pvesr delete <job>`), then run the "
        "state again.",
    ),
    (
        re.compile(r"protection mode enabled"),
        "The guest has protection set, and PVE refuses to remove it or change its volumes: clear it first "
        "in a run of its own (declare protection: 0, or `{cmd} set <vmid> --protection 0`), then run the "
        "state again.",
    ),
    (
        re.compile(r"unable to shrink disk size"),
        "PVE cannot shrink a volume: declare at least its live size.",
    ),
    (
        re.compile(r"only allowed for root@pam|only root(?:@pam)? can set"),
        "Only root@pam may make this change and an API token never is: run the `{cmd} set` PVE names on "
        "the node as root, then plan again.",
    ),
    (
        re.compile(r"is not empty \(contains"),
        "The pool still has members: move them out of it (sub-pools first), then run the state again.",
    ),
    (
        re.compile(r"parent '[^']*' of pool"),
        "The parent pool does not exist: declare it (or create it) before this one, then run again.",
    ),
    (
        re.compile(r"(?:role|user|group) '[^']*' does not exist|no such token"),
        "The ACL entry names something PVE does not have: create it (a role with proxmox_role, a user, "
        "group or token with pveum) or name an existing one, then run again.",
    ),
    (
        re.compile(r"invalid privilege"),
        "This PVE release does not know that privilege (PVE 8 and 9 differ): declare the privileges of "
        "the cluster's release.",
    ),
    (
        re.compile(r"invalid lock token provided"),
        "Another client holds PVE's global SDN lock (a transaction of several SDN writes, as Proxmox "
        "Datacenter Manager makes), and PVE refuses every SDN write and commit without its token: wait "
        "for it to commit or roll back (a lock left behind is released with `pvesh delete "
        "/cluster/sdn/lock --force 1`), then run the state again.",
    ),
    (
        re.compile(r"unable to (?:delete required|delete read-only|modify read-only) option"),
        "PVE never deletes or changes this key on a live guest: declare the value it has.",
    ),
)


#: The guest families' words a remedy fills in: the CLI, what ``ha-manager`` calls the resource,
#: and the noun (pve-container ``pct``/``ct:``, qemu-server ``qm``/``vm:``).
_TOOLS = {
    "lxc": {"cmd": "pct", "ha": "ct", "noun": "container"},
    "qemu": {"cmd": "qm", "ha": "vm", "noun": "VM"},
}
#: A request about no guest in particular: both spellings, so the remedy still fits.
_EITHER = {"cmd": "pct|qm", "ha": "ct|vm", "noun": "guest"}
_GUEST_PATH = re.compile(r"(?:^|/)nodes/[^/]+/(lxc|qemu)(?:/|$)")


def guest_tools(path: str) -> dict[str, str]:
    """The words of the guest family a request path is about (``nodes/<node>/qemu/…`` → ``qm``,
    ``vm``, ``VM``; ``…/lxc/…`` → ``pct``, ``ct``, ``container``); both, for any other path."""
    found = _GUEST_PATH.search(path.lstrip("/"))
    return _TOOLS[found.group(1)] if found else _EITHER


def remedy(status: int, message: str, path: str = "") -> str:
    """What to do about an HTTP failure: by PVE's wording first, then by status class. A command a
    remedy names is the family's own, from ``path`` (``guest_tools``).

    401 is pve-access-control's token check (``PVE::AccessControl::verify_token``), 403 a
    privilege check (``PVE::RPCEnvironment::check``), 595 pve-http-server's answer for a node it
    cannot proxy to, 502-504 a proxy in front of pveproxy (or pveproxy itself) failing. qemu-server
    ``API2/Qemu.pm`` ``destroy_vm`` says "VM <vmid> is running - destroy failed" where
    pve-container says "container is running".
    """
    for wording, text in _WORDINGS:
        if wording.search(message):
            return text.format(**guest_tools(path))
    if status == 401:
        return (
            "PVE did not accept the API token (revoked, expired or a wrong secret): issue a new token "
            "and publish it where this target's credentials come from (OpenBao or the static config)."
        )
    if status == 403:
        return (
            "PVE refused the privilege it names: grant it to the API token on that path (`pveum acl "
            "modify <path> --tokens <user@realm!token> --roles <role>`), or declare less."
        )
    if status == 400:
        return "PVE's schema rejected the form: correct the keys it names in the declaration."
    if status == 595:
        return (
            "The node is offline or the member cannot reach it: check `pvecm status`, bring the node "
            "back, then run the state again."
        )
    if status in (502, 503, 504):
        return (
            "A proxy in front of PVE, or pveproxy on the member, failed to answer: check the proxy and "
            "`systemctl status pveproxy` on the member, then run the state again."
        )
    if status == 501:
        return (
            "This PVE does not have the endpoint: check that the member runs a release this product "
            "supports (PVE 8 or 9) and that the request is one that release serves."
        )
    if status >= 500:
        return (
            "PVE failed on its side: read the node's journal (`journalctl -u pvedaemon -u pveproxy`), "
            "then run the state again."
        )
    return "Check the request PVE names, then run the state again."


def _sentence(text: str) -> str:
    return text if text.endswith((".", "?", "!")) else f"{text}."


class PveError(SaltProxmoxError):
    """An HTTP answer that is not success. ``status``, ``message``, ``errors`` as PVE sent them;
    the text adds ``remedy(status, message, path)``."""

    def __init__(self, method: str, path: str, status: int, message: str, errors: dict | None = None):
        self.method = method
        self.path = path
        self.status = status
        self.message = message.strip()
        self.errors = dict(errors or {})
        detail = "".join(f"; {key}: {str(reason).strip()}" for key, reason in sorted(self.errors.items()))
        said = _sentence(f"{method} {path}: HTTP {status} {self.message}{detail}")
        super().__init__(f"{said} {self.remedy_for(status, self.message, path)}")

    @staticmethod
    def remedy_for(status: int, message: str, path: str) -> str:
        """The remedy the text ends with: PVE's (``remedy``); another server's error names its own."""
        return remedy(status, message, path)


class PveConfigMissing(PveError):
    """PVE's exact "Configuration file '...' does not exist" answer (HTTP 500)."""


@dataclass(frozen=True)
class Words:
    """What the client's own sentences name for the API it talks to (``PveClient.words``): the
    ``product``, what to check when no member answers (``reach``) or an answer is not the API's
    (``api``), where an uncertain write is looked up (``tasks``) and the command that reads a task's
    log (``task_log``, formatted with ``node`` and ``upid``)."""

    product: str = "PVE"
    reach: str = "that pveproxy runs on them (`systemctl status pveproxy`)"
    api: str = "a PVE node's pveproxy (port 8006) and not a proxy or portal page, and that it runs PVE 8 or 9"
    tasks: str = "the node's task list (`pvesh get /nodes/<node>/tasks --source all`)"
    task_log: str = "`pvesh get /nodes/{node}/tasks/{upid}/log`"


#: PVE's words (pve-manager ``pvesh``, ``pveproxy`` on port 8006).
PVE_WORDS = Words()


class PveMalformed(SaltProxmoxError):
    """A 200 whose body does not have the shape the endpoint promises. Never an empty answer.
    ``words``: the API's (``Words``; PVE's by default)."""

    def __init__(self, method: str, path: str, why: str, words: Words = PVE_WORDS):
        self.method = method
        self.path = path
        super().__init__(
            f"{method} {path}: malformed answer from {words.product}: {why}. Whatever answered does not "
            f"answer as {words.product}'s API does: check that the member URL is {words.api}."
        )


class PveUnreachable(SaltProxmoxError):
    """No cluster member answered (connection refused, reset or timed out on every one)."""


class PveRequestFailed(SaltProxmoxError):
    """A request could not be made at all (a bad URL or header, an unusable CA bundle); nothing
    was sent. The text names the kind of failure, never the request's headers."""


def classify(method: str, path: str, status: int, message: str, errors: dict | None) -> PveError:
    """The typed error for an HTTP failure; the missing-config wording gets its own type."""
    if status == 500 and _MISSING_CONFIG.match(message.strip()):
        return PveConfigMissing(method, path, status, message, errors)
    return PveError(method, path, status, message, errors)
