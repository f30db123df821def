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

    def begin(self, run: object) -> None:
        """Serve run ``run`` (its key; None for a call outside a state run, which shares nothing):
        whatever another run learned is dropped, never served."""
        if run is None or run != self.run:
            self.clear()
            self.run = run
