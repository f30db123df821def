"""What one state run learned once for all its states (``RunMemo``), dropped when another run begins.

Several states of one run need the same fact, or must see what an earlier state of the run did:

- facts read once per run (``pve.facts``: the cluster's release, its tag style, a node's packages,
  a volume's presence; ``simple.acl``: the access names);
- what a plan would stage (``network.apply``: the interfaces each node's plan stages or removes;
  ``simple.spec``: the objects and values this run plans to create);
- what an apply did (``network.apply``/``sdn.apply``: a node's or the SDN's apply that covered
  the guests' bridges; the first failed apply, which stops the later ones of the run);
- the run's checked guest index (``guest.absence``).

Each entry's key names its target (``salt_proxmox.facts/<target>/version``). Salt keeps the memo in
``__context__`` (``run.config.context_for``), which a minion may keep from one job to the next
(``multiprocessing: False``): ``begin`` drops another run's entries, so a PVE upgrade is read and a
failed apply forgotten next run.
"""

from __future__ import annotations


class RunMemo(dict):
    """A mapping of what the current run learned (keys as above, values as each owner keeps them),
    tied to the run's key (``run.lowstate.Run.key``)."""

    def __init__(self) -> None:
        super().__init__()
        self.run: object = None
        #: The run itself (``run.lowstate.Run``: every chunk it declares), set by
        #: ``run.config.enter_run``, so a state can judge by what a later state of the same run declares
        #: (a storage destroy by the guests that name it); None outside a state run.
        self.chunks: object = None

    def begin(self, run: object) -> None:
        """Serve run ``run`` (its key; None for a call outside a state run, which shares nothing):
        whatever another run learned is dropped, never served."""
        if run is None or run != self.run:
            self.clear()
            self.run = run
            self.chunks = None


#: What the run's network and SDN steps leave for later states (``network.apply`` and ``sdn.apply``
#: write them; ``guest.nics``, ``network.rules`` and ``sdn.apply`` read them), keyed by target: the
#: deletions a ``removal: destroy`` state of this run staged (or would) per scope (``node <node>``,
#: ``sdn``), the guests a state of this run moves out of a pool or destroys (``leaving_pool``), and
#: whether a node's or the SDN's apply step of this run planned or applied its staged changes.
REMOVED = "salt_proxmox.removed/{target}/{scope}"
NODE_APPLIED = "salt_proxmox.node_applied/{target}/{node}"
SDN_APPLIED = "salt_proxmox.sdn_applied/{target}"


def removed(memo: RunMemo, target: str, scope: str) -> set[str]:
    """What ``removal: destroy`` states of this run deleted (or would) in ``scope``."""
    return set(memo.get(REMOVED.format(target=target, scope=scope)) or ())


def note_removed(memo: RunMemo, target: str, scope: str, name: str) -> None:
    """Record that a ``removal: destroy`` state of this run deleted (or would) ``name`` in ``scope``."""
    memo.setdefault(REMOVED.format(target=target, scope=scope), set()).add(name)


def node_applied(memo: RunMemo, target: str, node: str) -> bool:
    """True when a node apply step of this run planned or applied ``node``'s staged changes."""
    return bool(memo.get(NODE_APPLIED.format(target=target, node=node)))


def note_node_applied(memo: RunMemo, target: str, node: str) -> None:
    """Record that this run's apply step of ``node`` planned or applied its staged changes."""
    memo[NODE_APPLIED.format(target=target, node=node)] = True


def sdn_applied(memo: RunMemo, target: str) -> bool:
    """True when this run's SDN apply step planned or applied the pending SDN configuration."""
    return bool(memo.get(SDN_APPLIED.format(target=target)))


def note_sdn_applied(memo: RunMemo, target: str) -> None:
    """Record that this run's SDN apply step planned or applied the pending SDN configuration."""
    memo[SDN_APPLIED.format(target=target)] = True


#: The scope of the guests a state of this run destroys (or would): they leave every pool.
DESTROYED_GUESTS = "guests"


def _pool_scope(poolid: str) -> str:
    return f"pool {poolid}"


def note_leaving_pool(memo: RunMemo, target: str, poolid: str | None, kind: str, vmid: int) -> None:
    """Record that a guest state of this run moves guest ``vmid`` (``kind`` lxc/qemu, as a pool's
    ``members`` type it) out of pool ``poolid``, or, with ``poolid`` None, destroys it (PVE drops a
    destroyed guest from its pool: pve-access-control ``PVE/AccessControl.pm`` ``remove_vm_access``),
    or would under ``test``."""
    scope = DESTROYED_GUESTS if poolid is None else _pool_scope(poolid)
    note_removed(memo, target, scope, f"{kind}/{vmid}")


def leaving_pool(memo: RunMemo, target: str, poolid: str) -> set[tuple[str, int]]:
    """``{(kind, vmid)}`` of the guests this run moves out of pool ``poolid`` or destroys: a delete of
    the pool later in the run does not count them (``simple.pool.refusals``)."""
    found = set()
    for item in removed(memo, target, _pool_scope(poolid)) | removed(memo, target, DESTROYED_GUESTS):
        kind, _, vmid = item.partition("/")
        found.add((kind, int(vmid)))
    return found


def keep_run(memo: RunMemo, run: object) -> None:
    """Keep ``run`` (the ``lowstate.Run`` the current states belong to, or None outside a state run),
    kept by ``run.config.enter_run`` for a check that reads every declaration of the run (backup
    coverage); dropped with the rest when another run begins."""
    memo.chunks = run


def current_run(memo: RunMemo) -> object:
    """The state run ``keep_run`` kept, or None (a call outside a state run, or a memo that is a plain
    mapping: a context made by hand)."""
    return getattr(memo, "chunks", None)


#: The run-wide notes already given in this run (``note_once``), keyed by target and topic.
NOTED = "salt_proxmox.noted/{target}/{topic}"


def note_once(memo: RunMemo, target: str, topic: str) -> bool:
    """True the first time a state of this run asks for ``topic`` on ``target`` (it gives the note),
    False afterwards: a run-wide note (backup coverage) appears once per run, not once per state."""
    key = NOTED.format(target=target, topic=topic)
    if memo.get(key):
        return False
    memo[key] = True
    return True
