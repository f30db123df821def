"""The fault matrix's rows for a Proxmox Backup Server target: ``pbs_datastore`` against the staging
PBS fake (``tests.support.pbs``) under the faults PVE's rows meet, through ``PbsClient`` (one session,
member failover, the uncertain-write rules of ``salt_proxmox.pve.client``) and PBS's tasks.

What PBS answers (proxmox-backup 3.2.4 and proxmox-rest-server): a privilege the token lacks is HTTP
403 ``permission check failed`` before the handler runs, a token that does not authenticate 401, a
handler's own error 400 with its message as the plain body (``formatter.rs`` ``format_error``); only
``no such datastore '<name>'`` (proxmox-section-config ``lookup_json``) says a datastore is absent.
``create_datastore`` and ``delete_datastore`` answer a UPID (``WorkerTask::new_thread``); the worker's
end is read at ``/nodes/localhost/tasks/{upid}/status`` (``src/api2/node/tasks.rs``
``get_task_status``: ``running``, or ``stopped`` with ``exitstatus`` ``OK``, ``WARNINGS: N``, or the
error's message).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from salt_proxmox.pbs.datastore import SPEC
from salt_proxmox.simple import lifecycle
from tests.faults.harness import install_hooks
from tests.faults.pbs_harness import PBS_TARGET, PbsRun
from tests.faults.scenario import Scenario
from tests.support.pbs import PROVISION_TOKEN_ID, READ_TOKEN_ID

STORE = {"name": "store1", "path": "/mnt/datastore/store1", "comment": "PVE backups"}
ROW = f"{PBS_TARGET}/pbs_datastore/store1"
CREATE = "POST /config/datastore"
PUT = "PUT /config/datastore/store1"
DELETE = "DELETE /config/datastore/store1"
NOTHING = "Nothing was written."
READ = "/config/datastore/store1"
STATUS = "/status"


def pbs_row(
    scenario_id: str,
    fault: str,
    promise: str,
    result: bool | None,
    comment: tuple[str, ...],
    setup: Callable[[PbsRun], None] | None = None,
    declaration: Mapping[str, Any] = STORE,
    **more: Any,
) -> Scenario:
    """A row of the ``pbs`` group: datastore store1 declared (``STORE`` unless told), as state store1."""
    more.setdefault("state", "pbs_present")
    return Scenario(
        scenario_id, "pbs", fault, promise, result, comment, setup, declaration, name="store1", **more
    )


def both(*setups: Callable[[PbsRun], None]) -> Callable[[PbsRun], None]:
    """Several setups in order."""

    def setup(run: PbsRun) -> None:
        for one in setups:
            one(run)

    return setup


def fail(method: str, suffix: str, status: int, message: str) -> Callable[[PbsRun], None]:
    return lambda run: run.fail(method, suffix, status, message)


def answer(method: str, suffix: str, data: object) -> Callable[[PbsRun], None]:
    return lambda run: run.answer(method, suffix, data)


def lose(method: str, suffix: str, how: str) -> Callable[[PbsRun], None]:
    return lambda run: run.lose_answer(method, suffix, how)


def no_audit(run: PbsRun) -> None:
    """The read token holds NoAccess on /datastore: Datastore.Audit on /datastore/store1 is gone
    (``CachedUserInfo::lookup_privs``: the most specific path with entries wins)."""
    run.pbs.acl.append(("/datastore", READ_TOKEN_ID, "NoAccess", True))


def no_allocate(run: PbsRun) -> None:
    """The provision token loses its Admin role on /datastore (Datastore.Allocate, create_datastore)."""
    run.pbs.acl = [e for e in run.pbs.acl if not (e[0] == "/datastore" and e[1] == PROVISION_TOKEN_ID)]


def revoke(token_id: str) -> Callable[[PbsRun], None]:
    """The token is deleted on PBS: its secret no longer authenticates (``src/server/auth.rs``)."""
    return lambda run: run.pbs.token_secrets.pop(token_id, None)


def revoke_before(method: str, suffix: str, token_id: str) -> Callable[[PbsRun], None]:
    return lambda run: run.before(method, suffix, revoke(token_id))


def members(*which: str) -> Callable[[PbsRun], None]:
    """The target's members in order: ``dead`` (connect refused) or ``pbs`` (the fake)."""

    def setup(run: PbsRun) -> None:
        run.target["members"] = [run.dead_member() if m == "dead" else run.served.url for m in which]

    return setup


def taken_before_create(run: PbsRun) -> None:
    """Somebody creates store1 between the plan's read and the create."""
    run.before("POST", "/config/datastore", lambda r: r.add_datastore("store1", "/srv/theirs"))


def edited_before_put(run: PbsRun) -> None:
    """Somebody edits datastore.cfg after the digest was read and before the PUT."""

    def edit(r: PbsRun) -> None:
        r.pbs.datastores["store1"]["gc-schedule"] = "weekly"

    run.before("PUT", READ, edit)


def earlier_apply(how: str | None = None) -> Callable[[PbsRun], None]:
    """An apply of ``STORE`` before the scenario's run, into the same rows; with ``how``, its create's
    answer was lost that way (the datastore made, the row left ``creating``)."""

    def setup(run: PbsRun) -> None:
        ctx = run.context()
        if how is not None:
            run.lose_answer("POST", "/config/datastore", how)
            install_hooks(ctx, run)
            run.lost.clear()
        lifecycle.present(ctx, SPEC, False, "store1", **STORE)

    return setup


def hold_tasks(run: PbsRun) -> None:
    run.pbs.hold_tasks = True


def data_in_path(run: PbsRun) -> None:
    run.pbs.seed_data(STORE["path"])


PBS: list[Scenario] = [
    # ---------------------------------------------------------------------------------- reads
    pbs_row(
        "pbs-read-403",
        "the read token lacks Datastore.Audit on /datastore/store1: PBS answers 403 permission check failed",
        "a 403 is a failure, never absence: no create",
        False,
        ("HTTP 403 permission check failed", "proxmox-backup-manager acl update", NOTHING),
        no_audit,
        never=("/config/datastore",),
    ),
    pbs_row(
        "pbs-read-401",
        "the read token was deleted on PBS: 401 authentication failed",
        "a token PBS does not accept proves nothing absent",
        False,
        ("HTTP 401 authentication failed", "proxmox-backup-manager user generate-token", NOTHING),
        revoke(READ_TOKEN_ID),
        never=("/config/datastore",),
    ),
    pbs_row(
        "pbs-read-400-other",
        "the datastore read answers 400 with another message than `no such datastore 'store1'`",
        "only PBS's exact absence answer (lookup_json) leads to a create",
        False,
        ("HTTP 400 unable to open file", "PBS refused the call", NOTHING),
        fail("GET", READ, 400, "unable to open file '/etc/proxmox-backup/datastore.cfg' - Permission denied"),
        never=("/config/datastore",),
    ),
    pbs_row(
        "pbs-read-502-proxy",
        "the datastore read answers 502 with a proxy's HTML page",
        "a 5xx is a failure, never absence",
        False,
        ("HTTP 502", "systemctl status proxmox-backup-proxy", NOTHING),
        fail("GET", READ, 502, "<html><body>502 Bad Gateway</body></html>"),
        never=("/config/datastore",),
    ),
    pbs_row(
        "pbs-read-200-html",
        "the datastore read answers 200 with an HTML page (a captive portal)",
        "a body that is not PBS's JSON is an error",
        False,
        ("malformed answer from PBS", "not a JSON object", "proxmox-backup-proxy (port 8007)", NOTHING),
        fail("GET", READ, 200, "<html><body>Welcome to the portal</body></html>"),
        never=("/config/datastore",),
    ),
    pbs_row(
        "pbs-read-200-null",
        "the datastore read answers 200 with data null",
        "a 200 without the datastore's config is an error, not an absent datastore",
        False,
        ("malformed answer", "not this datastore's config", NOTHING),
        answer("GET", READ, None),
        never=("/config/datastore",),
    ),
    pbs_row(
        "pbs-unreachable",
        "the only PBS member refuses connections",
        "an unreachable PBS is a failure naming the member, never absence",
        False,
        ("no member of target backup1 answered", "connection refused", "proxmox-backup-proxy", NOTHING),
        members("dead"),
    ),
    pbs_row(
        "pbs-read-timeout",
        "the datastore read times out (PBS acted, the answer never came)",
        "a read that timed out on every member is a failure, never absence",
        False,
        ("read timed out", NOTHING),
        lose("GET", READ, "read-timeout"),
        never=("/config/datastore",),
    ),
    pbs_row(
        "pbs-first-member-refuses",
        "the first PBS member refuses connections, the second is PBS",
        "members are tried in order when one does not answer: the create goes to the next, once",
        True,
        ("has been created",),
        members("dead", "pbs"),
        writes=(CREATE,),
        rows={ROW: "owned"},
    ),
    # ---------------------------------------------------------------------------------- writes
    pbs_row(
        "pbs-create-403",
        "the provision token lacks Datastore.Allocate on /datastore: the create answers 403",
        "a refused create claims nothing: the row is put back as it was",
        False,
        ("HTTP 403 permission check failed", "proxmox-backup-manager acl update"),
        no_allocate,
        writes=(CREATE,),
    ),
    pbs_row(
        "pbs-create-provision-revoked",
        "the provision token is deleted on PBS between the read and the create: 401",
        "a create PBS did not authenticate claims nothing",
        False,
        ("HTTP 401 authentication failed", "proxmox-backup-manager user generate-token"),
        revoke_before("POST", "/config/datastore", PROVISION_TOKEN_ID),
        writes=(CREATE,),
    ),
    pbs_row(
        "pbs-create-already-exists",
        "somebody creates store1 between the read and the create: `datastore 'store1' already exists.`",
        "a datastore somebody else made meanwhile is neither overwritten nor claimed",
        False,
        ("already exists", "plan again", "adopt: true"),
        taken_before_create,
        writes=(CREATE,),
    ),
    pbs_row(
        "pbs-create-504-after-send",
        "the create reaches PBS (the datastore is made) and a proxy answers 504",
        "uncertain: not retried, the row stays creating, the comment says PBS may have acted",
        False,
        (
            "HTTP 504",
            "PBS may or may not have acted",
            "proxmox-backup-manager task list",
            "nothing was retried",
        ),
        lose("POST", "/config/datastore", "504"),
        writes=(CREATE,),
        rows={ROW: "creating"},
    ),
    pbs_row(
        "pbs-create-answer-cut-off",
        "the create reaches PBS and its answer is cut off",
        "uncertain: not retried, the row stays creating",
        False,
        ("was cut off", "may or may not have acted"),
        lose("POST", "/config/datastore", "chunked"),
        writes=(CREATE,),
        rows={ROW: "creating"},
    ),
    pbs_row(
        "pbs-create-timeout-after-send",
        "the create reaches PBS and no answer comes within the timeout",
        "uncertain: a timed out write is never re-sent to the next member",
        False,
        ("did not answer within", "may or may not have acted"),
        both(members("pbs", "pbs"), lose("POST", "/config/datastore", "read-timeout")),
        writes=(CREATE,),
        rows={ROW: "creating"},
    ),
    pbs_row(
        "pbs-lost-create-settled",
        "the next apply after a create whose answer was lost (504): store1 exists as declared",
        "the next run finishes our own create, neither creating twice nor calling it foreign",
        True,
        ("our interrupted create is finished",),
        earlier_apply("504"),
        rows={ROW: "owned"},
    ),
    pbs_row(
        "pbs-lost-create-planned",
        "the plan after a create whose answer was lost (504)",
        "the plan says the interrupted create is ours and writes nothing",
        None,
        ("our interrupted create is finished",),
        earlier_apply("504"),
        test=True,
        rows={ROW: "creating"},
    ),
    pbs_row(
        "pbs-lost-create-differs",
        "after a lost create answer, store1 exists with another comment than declared",
        "an unfinished create is finished only when the datastore matches; else refused, naming adopt",
        False,
        ("recorded as unfinished", "differs in comment", "adopt: true", NOTHING),
        earlier_apply("504"),
        {**STORE, "comment": "another"},
        rows={ROW: "creating"},
    ),
    # ---------------------------------------------------------------------------------- tasks
    pbs_row(
        "pbs-create-task-error",
        "the create-datastore task ends in error (`datastore path not empty`)",
        "a failed task fails the state with PBS's message and the UPID; nothing is claimed",
        False,
        ("datastore path not empty", "UPID:pbs:", "proxmox-backup-manager task log"),
        data_in_path,
        writes=(CREATE,),
        rows={ROW: "creating"},
    ),
    pbs_row(
        "pbs-create-task-running",
        "the create-datastore task is still running when the poll bound is reached",
        "uncertain: the task is not cancelled, nothing is retried, the row stays creating",
        False,
        ("still running after", "UPID:pbs:", "nothing is retried"),
        hold_tasks,
        writes=(CREATE,),
        rows={ROW: "creating"},
        polls=2,
    ),
    pbs_row(
        "pbs-create-task-unreadable",
        "the create-datastore task's status answers 200 with an HTML page",
        "a task whose end cannot be read is uncertain, never success",
        False,
        ("could not be read", "UPID:pbs:", "Nothing is retried"),
        lose("GET", STATUS, "html-200"),
        writes=(CREATE,),
        rows={ROW: "creating"},
    ),
    pbs_row(
        "pbs-create-no-upid",
        "the create answers 200 with data null instead of a UPID",
        "a create without a task id cannot be confirmed and is not claimed",
        False,
        ("PBS answered no task id",),
        answer("POST", "/config/datastore", None),
        writes=(CREATE,),
        rows={ROW: "creating"},
    ),
    # ---------------------------------------------------------------------------------- updates and deletes
    pbs_row(
        "pbs-update-digest-race",
        "datastore.cfg is edited after the digest was read: `detected modified configuration`",
        "a concurrent edit is never overwritten: the update is refused with plan again",
        False,
        ("detected modified configuration", "plan again"),
        both(earlier_apply(), edited_before_put),
        {**STORE, "comment": "changed"},
        writes=(PUT,),
        rows={ROW: "owned"},
    ),
    pbs_row(
        "pbs-update-504-after-send",
        "the update reaches PBS and a proxy answers 504",
        "uncertain: not retried, the row stays owned",
        False,
        ("HTTP 504", "may or may not have acted"),
        both(earlier_apply(), lose("PUT", READ, "504")),
        {**STORE, "comment": "changed"},
        writes=(PUT,),
        rows={ROW: "owned"},
    ),
    pbs_row(
        "pbs-delete-504-after-send",
        "removal: destroy; the delete reaches PBS (the datastore goes) and a proxy answers 504",
        "uncertain: not retried, the row is kept until a read proves the datastore gone",
        False,
        ("HTTP 504", "may or may not have acted", "Nothing was deleted unless said above"),
        both(earlier_apply(), lose("DELETE", READ, "504")),
        {"name": "store1", "removal": "destroy"},
        state="pbs_absent",
        writes=(DELETE,),
        rows={ROW: "owned"},
        uncertain=True,
    ),
]
