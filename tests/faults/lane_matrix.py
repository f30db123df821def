"""The fault matrix's rows of the root lane (``proxmox:targets:<t>:root_lane``): the writes PVE lets
only root@pam make, sent through ``pvesh`` on a node (``salt_proxmox.pve.lane``, ``guest.lane``) and,
for a container's raw ``lxc.*`` lines, into its config file under PVE's lock (``lxc.rawkeys``).

Each row gives the target a lane (``Run.root_lane``: a fake ``pvesh`` forwarding to the fake
cluster as root@pam, ``tests.support.pvesh``, and a ``pve_dir`` where the fake keeps the
containers' files, ``tests.support.pmxcfs``) and breaks one thing about it: pvesh itself (missing,
not executable, not root, on another cluster), its answer to a write (refused, never ending, cut off,
a task that fails), the config file (changed, locked, held, not there), or a create's second write.
``writes`` lines ending ``as root@pam`` went through the lane. Container 120 is recorded as ours;
``mp1`` is a bind mount (pve-container ``src/PVE/LXC.pm`` ``check_ct_modify_config_perm``: "mount
point type bind is only allowed for root@pam"), ``memory`` a key the provision token writes.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fakepve.model import TaskError
from fakepve.server import USER, ok

from salt_proxmox.guest import identity as guest_identity
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.lxc import rawkeys
from salt_proxmox.lxc.family import LXC
from tests.faults.harness import Run, write_lines
from tests.faults.scenario import Scenario
from tests.support.cluster import DNS1_CONFIG, ServedCluster
from tests.support.guests import TARGET, declaration, dns1, make_context, requests_since

GROUP = ("lane", "Root lane: writes only root may make, through pvesh on the node")

BIND = "/srv/share,mp=/share"
GPU = [["lxc.cgroup2.devices.allow", "c 226:0 rwm"], ["lxc.cgroup2.devices.allow", "c 226:128 rwm"]]
WHERE = f"proxmox:targets:{TARGET}:root_lane"
CONFIG_120 = "/nodes/pve1/lxc/120/config"
PUT_120 = f"PUT {CONFIG_120}"
LANE_PUT_120 = f"{PUT_120} as root@pam"
NOTHING = "Nothing was written."

#: Container 120 recorded as this state's own (as ``tests.support.lanes.owned_dns1`` records it).
OWNED_120 = {
    f"{TARGET}/lxc/120": {
        "phase": "owned",
        "instance": "seeded",
        "state_id": "dns",
        "declared": {"vmid": 120, "node": "pve1"},
        "fingerprint": guest_identity.live_fingerprint(LXC, DNS1_CONFIG),
    }
}
ROW_120 = {f"{TARGET}/lxc/120": "owned"}
#: A bind mount and a memory change: the token writes memory first, then the lane mp1 (guest.apply).
BOTH = dns1(mp1=BIND, memory=1024)
#: Only the bind mount: the lane's write is the only one.
BIND_ONLY = dns1(mp1=BIND)
#: Only raw lines: no API write at all, the config file on pve1 is the only one.
RAW_ONLY = dns1(lxc=GPU)
#: A container created with a bind mount: the token's create, then the lane's write (guest.lane).
CREATE_150 = declaration(mp1=BIND)


def _file(run: Run, vmid: int = 120) -> Path:
    return Path(rawkeys.config_path(run.target["root_lane"]["pve_dir"], "pve1", vmid))


# ------------------------------------------------------------------------------------------ fault setups


def lane(**how: Any) -> Callable[[Run], None]:
    """A root lane as ``Run.root_lane(**how)`` gives it."""

    def setup(run: Run) -> None:
        run.root_lane(**how)

    return setup


def pvesh_missing(run: Run) -> None:
    """``root_lane:pvesh`` names a path where no file is (a minion that is not on a PVE node)."""
    where = run.root_lane()
    run.target["root_lane"]["pvesh"] = str(where / "usr" / "bin" / "pvesh")


def pvesh_not_executable(run: Run) -> None:
    """The configured pvesh is a file without an execute bit."""
    (run.root_lane() / "bin" / "pvesh").chmod(0o644)


def other_cluster(run: Run) -> None:
    """pvesh runs on node pve1 of another cluster (``other``), which has its own CT 120."""
    other = ServedCluster().start()
    run._closers.append(other.stop)
    run.others.append(other)
    other.pve.cluster_name = "other"
    run.root_lane(served=other)


def fail_once(path: str, **how: Any) -> Callable[[Run], None]:
    """fakepve refuses the next ``PUT path`` (``fail(..., times=1)``), after a lane is given."""

    def setup(run: Run) -> None:
        run.root_lane()
        run.pve.fail("PUT", path, times=1, **how)

    return setup


def lock_before_lane_write(run: Run) -> None:
    """Another task takes CT 120's config lock after the token's write, before the lane's."""
    run.root_lane()
    run.before_lane("PUT", CONFIG_120, lambda r: r.cluster.run_coro(r.pve.hold_config_lock(120, None)))


def lane_write_task(end: str, acts: bool, **how: Any) -> Callable[[Run], None]:
    """root@pam's ``PUT`` of CT 120's config answers the UPID of a task ending ``end`` (``OK`` or
    an error), as fakepve answers a call whose error is raised inside a worker (``fail(error=...)``
    with ``in_task``); with ``acts`` the write is made first. A lane (``how``) is given."""

    def setup(run: Run) -> None:
        run.root_lane(**how)
        pve = run.pve
        original = pve._answer

        async def answer(request, handler, generic, path_node):
            if not (
                request.method == "PUT"
                and request.path.endswith(CONFIG_120)
                and request.get(USER) == "root@pam"
            ):
                return await original(request, handler, generic, path_node)
            if acts:
                response = await original(request, handler, generic, path_node)
                if response.status != 200:
                    return response

            async def body():
                if end != "OK":
                    raise TaskError(end)

            return ok(await pve.task("pve1", "config", 120, "root@pam", body))

        pve._answer = answer

    return setup


def edit_file_before_membership_read(run: Run) -> None:
    """Somebody adds a raw line to CT 120's file after the state read its config (just before the
    read token's ``GET /cluster/status`` of the lane's check)."""
    run.root_lane(files=True)

    def edit(r: Run) -> None:
        path = _file(r)
        path.write_text(path.read_text() + "lxc.mount.entry: /srv srv none bind 0 0\n")

    run.before("GET", "/cluster/status", edit)


def backup_lock_120(run: Run) -> None:
    """A vzdump of CT 120 runs: its config holds ``lock: backup`` (fakepve ``backup``'s body)."""
    run.root_lane(files=True)
    ct = run.pve.ct(120)
    ct.lock = ct.config["lock"] = "backup"
    run.pve.files_out()


def flock_held_120(run: Run) -> None:
    """Another process holds CT 120's config flock (``lock_config``) for the whole run: a lock on
    another open file description, as ``flock(2)`` sees one."""
    run.root_lane(files=True)
    path = rawkeys.lock_path(run.target["root_lane"]["lock_dir"], 120)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    run._closers.insert(0, lambda: os.close(fd))


def first_create_fails(run: Run) -> None:
    """A first run created CT 150 with the token and its lane write was refused (the config lock
    timed out): CT 150 is there without mp1 and its row is ``creating``."""
    fail_once("/nodes/pve1/lxc/150/config", error="config_lock_timeout")(run)
    first = guest_lifecycle.present(
        make_context(run.targets, run.openbao, store=run.store), LXC, "web", False, **CREATE_150
    )
    assert first.result is False and run.store.rows[f"{TARGET}/lxc/150"]["phase"] == "creating", first.comment


# ------------------------------------------------------------------------------------------ what is left


def lines_not_written(also: str | None = None) -> Callable[[Run], None]:
    """CT 120's file holds none of the declared raw lines (and ``also``, a line somebody else wrote)."""

    def check(run: Run) -> None:
        text = _file(run).read_text()
        assert "226:0" not in text and "226:128" not in text, text
        assert also is None or also in text, text

    return check


def no_file_made(run: Run) -> None:
    """The state made no config file where none could be read."""
    assert not _file(run).exists()


def other_cluster_untouched(run: Run) -> None:
    """The other cluster saw no write either (the fake pvesh's logins aside)."""
    for other in run.others:
        assert write_lines(requests_since(other, 0)) == [], other


def task_awaited_through_the_lane(run: Run) -> None:
    """The lane's task was polled by its owner, root@pam, through pvesh, never with a token."""
    polls = [who for method, path, who in run.pve.senders if method == "GET" and "/tasks/UPID:" in path]
    assert polls and set(polls) == {"root@pam"}, polls


# ------------------------------------------------------------------------------------------ the rows


def _row(id_: str, fault: str, promise: str, result: bool | None, comment: tuple[str, ...], setup, declared,
         **more: Any) -> Scenario:  # fmt: skip
    """A lane row on CT 120 (state ``dns``, seeded as ours) unless ``more`` says otherwise."""
    kw: dict[str, Any] = {"name": "dns", "seed_rows": OWNED_120, "rows": ROW_120, **more}
    return Scenario(id_, GROUP[0], fault, promise, result, comment, setup, declared, **kw)


LANE: list[Scenario] = [
    # ------------------------------------------------------------------------- preconditions
    _row(
        "lane-pvesh-missing",
        "root_lane:pvesh names a path where no pvesh is (the minion is not on a PVE node)",
        "refused at apply as at plan, naming the lane and why; the token's memory is not written either",
        False,
        (f"{WHERE}: pvesh is not at", "run the states on a node of the cluster", NOTHING),
        pvesh_missing,
        BOTH,
    ),
    _row(
        "lane-pvesh-not-executable",
        "the configured pvesh is a file without an execute bit",
        "refused at plan naming the lane and the file; nothing is run, nothing written",
        False,
        (f"{WHERE}: ", "is not executable", NOTHING),
        pvesh_not_executable,
        BOTH,
        test=True,
    ),
    _row(
        "lane-pvesh-not-root",
        "pvesh runs as a user other than root (pve-common setup_default_cli_env: `please run as root`)",
        "refused naming the lane and that pvesh runs only as root; nothing written",
        False,
        (f"{WHERE}: pvesh runs only as root", "please run as root", NOTHING),
        lane(root=False),
        BOTH,
    ),
    _row(
        "lane-pvesh-other-cluster",
        "pvesh runs on node pve1 of another cluster (`other`), whose CT 120 it would write",
        "refused: the lane's node must be a member of the target's cluster; nothing written on either",
        False,
        (f"{WHERE}: pvesh runs on node pve1 of cluster other", "not a member of target lab", NOTHING),
        other_cluster,
        BOTH,
        leaves=other_cluster_untouched,
    ),
    _row(
        "lane-pvesh-no-local-node",
        "pvesh's /cluster/status names no local node (it runs on a node the cluster does not list)",
        "its node unknown, the lane is refused; nothing written",
        False,
        (f"{WHERE}: pvesh's /cluster/status names no local node", NOTHING),
        lane(node="pve9"),
        BOTH,
    ),
    # ------------------------------------------------------------------------- lane writes
    _row(
        "lane-write-refused-after-token-write",
        "another task takes CT 120's config lock between the token's write and the lane's",
        "the lane's write fails with PVE's reason (pvesh's bare die on stderr); the return says the "
        "token's memory was written first and that mp1 was not",
        False,
        ("can't lock file", "Already written: memory."),
        lock_before_lane_write,
        BOTH,
        writes=(PUT_120, LANE_PUT_120),
    ),
    _row(
        "lane-write-refused",
        "pvesh's write of the bind mount is refused: a vzdump locked CT 120 since it was read",
        "fails with PVE's reason; nothing is retried, nothing else written",
        False,
        ("is locked (backup)", NOTHING),
        fail_once(CONFIG_120, error="locked"),
        BIND_ONLY,
        writes=(LANE_PUT_120,),
    ),
    _row(
        "lane-write-timeout",
        "pvesh writes the bind mount, then never exits (the lane's timeout is 5 s)",
        "uncertain: PVE may or may not have acted; the write is not retried and the next run re-reads",
        False,
        ("no answer within 5s", "may or may not have acted", "reads the guest again"),
        lane(timeout=5, after={f"set {CONFIG_120}": "hang"}),
        BIND_ONLY,
        writes=(LANE_PUT_120,),
    ),
    _row(
        "lane-write-output-cut",
        "pvesh writes the bind mount; its output (the task's UPID) is cut off: no JSON in it",
        "uncertain: PVE may or may not have acted; nothing is retried or awaited",
        False,
        ("holds no JSON answer", "may or may not have acted", "reads the guest again"),
        lane_write_task("OK", acts=True, after={f"set {CONFIG_120}": "cut"}),
        BIND_ONLY,
        writes=(LANE_PUT_120,),
    ),
    _row(
        "lane-write-task-error",
        "pvesh's write answers a UPID whose task ends TASK ERROR (it timed out on the config lock)",
        "fails naming the task and its log; the task is awaited by its owner, root@pam, through pvesh",
        False,
        ("can't lock file", "pvesh get /nodes/pve1/tasks/UPID:pve1:", ":config:120:root@pam:"),
        lane_write_task("can't lock file '/run/lock/lxc/pve-config-120.lock' - got timeout", acts=False),
        BIND_ONLY,
        writes=(LANE_PUT_120,),
        leaves=task_awaited_through_the_lane,
    ),
    # ------------------------------------------------------------------------- raw lxc.* lines
    _row(
        "lane-raw-file-changed",
        "somebody adds a raw line to CT 120's config file after the state read its config",
        "the file's SHA-1 is not the digest judged (parse_pct_config): nothing written, their line kept",
        False,
        ("changed since it was judged", "nothing was written", "Plan again"),
        edit_file_before_membership_read,
        RAW_ONLY,
        leaves=lines_not_written("lxc.mount.entry: /srv srv none bind 0 0"),
    ),
    _row(
        "lane-raw-config-locked",
        "a vzdump runs on CT 120: its config file holds `lock: backup`",
        "refused at apply as at plan naming the lock (AbstractConfig.pm check_lock); nothing written",
        False,
        ("backup", NOTHING),
        backup_lock_120,
        RAW_ONLY,
        leaves=lines_not_written(),
    ),
    _row(
        "lane-raw-flock-held",
        "another process holds CT 120's config flock (/run/lock/lxc/pve-config-120.lock) the whole run",
        "after lock_file_full's 10 s: refused naming the lock; the file is never written without it",
        False,
        ("can't lock file", "got timeout", "nothing was written"),
        flock_held_120,
        RAW_ONLY,
        leaves=lines_not_written(),
    ),
    _row(
        "lane-raw-file-unreadable",
        "the node's config file cannot be read (pmxcfs is not mounted at the lane's pve_dir)",
        "a read failure, never absence: nothing written, no file made",
        False,
        ("cannot be read (No such file or directory)", "nothing was written"),
        lane(),
        RAW_ONLY,
        leaves=no_file_made,
    ),
    # ------------------------------------------------------------------------- create
    Scenario(
        "lane-create-write-fails",
        GROUP[0],
        "CT 150 is created with a bind mount; the lane's write after the token's create is refused",
        "the create stays: its row stays creating and the return says the guest exists",
        False,
        ("can't lock file", "Already written:", "ownership row stays creating"),
        fail_once("/nodes/pve1/lxc/150/config", error="config_lock_timeout"),
        CREATE_150,
        writes=("POST /nodes/pve1/lxc", "PUT /nodes/pve1/lxc/150/config as root@pam"),
        rows={f"{TARGET}/lxc/150": "creating"},
    ),
    Scenario(
        "lane-create-finished-next-run",
        GROUP[0],
        "the run after lane-create-write-fails: CT 150 is there, tied to our create, without mp1",
        "the next run records it as ours and writes only mp1, through the lane",
        True,
        ("has been updated: mp1",),
        first_create_fails,
        CREATE_150,
        writes=("PUT /nodes/pve1/lxc/150/config as root@pam",),
        rows={f"{TARGET}/lxc/150": "owned"},
    ),
]
