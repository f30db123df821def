"""Ownership rows that are never lost silently, ad-hoc writes that obey ownership, and writes whose
fate is unknown, against fakepve with the store the Salt module uses (the rows file beside Salt's
grains file).

- A row that cannot be written fails the state naming the rows file and the row; the write it
  guards is not sent, and a guest already made keeps its ``creating`` row so the next run finishes
  it as ours (docs/design.md §8).
- ``proxmox.lxc_resize`` on a guest this minion did not create is refused as ``lxc_update`` is.
- After a create POST or a config PUT was sent, an answer that does not say what happened (a
  gateway's 504, pveproxy's 596/597, an HTML 200, a body cut off or not decompressible) is
  uncertain: the ``creating`` row stays and the next run resumes; nothing is re-sent. fakepve acts
  on every request it receives; the lost answer is made by the transport below it, as a proxy
  between the minion and pveproxy would lose it.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
import requests
from requests.adapters import HTTPAdapter

from salt_proxmox.errors import Refused
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.files import FileStore
from salt_proxmox.ownership.rows import CREATING, OWNED, row_key
from salt_proxmox.ownership.stores import ROWS_FILE
from salt_proxmox.run import config as run_config
from salt_proxmox.run.context import PveContext
from tests.support.cluster import DNS1_VMID, ServedCluster
from tests.support.guests import TARGET, declaration, requests_since, static_targets, writes

ROW = row_key(TARGET, "lxc", 150)


def grain_context(served: ServedCluster, grains_dir, session: requests.Session | None = None) -> PveContext:
    """A context as ``_modules/proxmox.py`` builds it: the store from ``run_config.salt_store`` over a
    minion config in ``grains_dir`` (so the rows live in ``grains_dir/salt_proxmox_owned.json``)."""
    (grains_dir / "minion").write_text("id: test\n")
    opts = {"conf_file": str(grains_dir / "minion"), "local": True}
    cache: dict = {}
    if session is not None:
        cache[f"salt_proxmox.session/{TARGET}"] = session
    store = run_config.salt_store({"config.get": lambda key, default=None: default}, opts, cache, {})
    ctx = run_config.context_for(static_targets(served), TARGET, None, cache, store)
    ctx.sleep = lambda _seconds: None
    return ctx


def rows(grains_dir) -> dict:
    return FileStore(grains_dir / ROWS_FILE).load()


def next_run_finishes_the_create(served: ServedCluster, grains_dir) -> None:
    """The next run finds CT 150 made under a ``creating`` row: it records it as ours and sends
    nothing (a create is never repeated)."""
    start = len(served.pve.requests)
    again = guest_lifecycle.present(grain_context(served, grains_dir), LXC, "web", False, **declaration())
    assert again.result is True, again.comment
    assert writes(requests_since(served, start)) == [], "finished as ours, never created twice"
    assert rows(grains_dir)[ROW]["phase"] == OWNED


def fail_writes(monkeypatch, after: int = 0) -> None:
    """Make every write of the rows file (a rewrite or an appended line) after the first ``after``
    fail as on a read-only filesystem."""
    real_replace, real_open = os.replace, os.open
    done = []

    def refuse(path) -> None:
        if os.path.basename(path) == ROWS_FILE and len(done) >= after:
            raise OSError(30, "Read-only file system")
        done.append(path)

    def replace(src, dst, *args, **kwargs):
        refuse(dst)
        return real_replace(src, dst, *args, **kwargs)

    def open_(path, flags, *args, **kwargs):
        if flags & os.O_APPEND:
            refuse(path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "open", open_)


# --------------------------------------------------------------------------------------------
# rows never lost silently
# --------------------------------------------------------------------------------------------


def test_a_creating_row_that_cannot_be_written_stops_the_create_before_it_is_sent(
    fresh_cluster, tmp_path, monkeypatch
):
    ctx = grain_context(fresh_cluster, tmp_path)
    fail_writes(monkeypatch)
    start = len(fresh_cluster.pve.requests)
    outcome = guest_lifecycle.present(ctx, LXC, "web", False, **declaration())
    text = "\n".join(outcome.comment)
    assert outcome.result is False
    assert str(tmp_path / ROWS_FILE) in text and ROW in text and "creating" in text, text
    assert writes(requests_since(fresh_cluster, start)) == [], "the create is not sent without its row"
    assert fresh_cluster.pve.ct(150) is None


def test_an_owned_row_that_cannot_be_written_fails_and_the_next_run_finishes_the_create(
    fresh_cluster, tmp_path, monkeypatch
):
    ctx = grain_context(fresh_cluster, tmp_path)
    fail_writes(monkeypatch, after=1)  # the creating row goes to disk; the owned row does not
    outcome = guest_lifecycle.present(ctx, LXC, "web", False, **declaration())
    text = "\n".join(outcome.comment)
    assert outcome.result is False and str(tmp_path / ROWS_FILE) in text and ROW in text, text
    assert f"stays {CREATING}" in text and fresh_cluster.pve.ct(150) is not None
    assert rows(tmp_path)[ROW]["phase"] == CREATING, "not left believing the guest is foreign"

    monkeypatch.undo()
    next_run_finishes_the_create(fresh_cluster, tmp_path)


def test_an_unparseable_rows_file_is_named_never_read_as_not_ours(fresh_cluster, tmp_path):
    ctx = grain_context(fresh_cluster, tmp_path)
    assert guest_lifecycle.present(ctx, LXC, "web", False, **declaration()).result is True
    good = (tmp_path / ROWS_FILE).read_text()
    (tmp_path / ROWS_FILE).write_text(good + "broken: [unclosed\n" + good.splitlines()[-1] + "\n")
    start = len(fresh_cluster.pve.requests)
    outcome = guest_lifecycle.present(
        grain_context(fresh_cluster, tmp_path), LXC, "web", False, **declaration(memory=2048)
    )
    text = "\n".join(outcome.comment)
    assert outcome.result is False and f"{tmp_path / ROWS_FILE}: line" in text, text
    assert "did not create it" not in text and "adopt" not in text
    assert writes(requests_since(fresh_cluster, start)) == []


def test_a_no_drift_apply_writes_no_row(fresh_cluster, tmp_path):
    ctx = grain_context(fresh_cluster, tmp_path)
    for vmid in (150, 151):
        assert (
            guest_lifecycle.present(ctx, LXC, f"ct{vmid}", False, **declaration(vmid=vmid, mp0=None)).result
            is True
        )
    before = (tmp_path / ROWS_FILE).stat()
    again = grain_context(fresh_cluster, tmp_path)
    for vmid in (150, 151):
        outcome = guest_lifecycle.present(again, LXC, f"ct{vmid}", False, **declaration(vmid=vmid, mp0=None))
        assert outcome.result is True and outcome.changes == {}, outcome.comment
    after = (tmp_path / ROWS_FILE).stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    assert not (tmp_path / "grains").exists(), "nor the grains file"


def test_a_row_an_adhoc_call_wrote_during_a_run_survives_the_run(fresh_cluster, tmp_path):
    run = grain_context(fresh_cluster, tmp_path)
    assert guest_lifecycle.present(run, LXC, "ct150", False, **declaration(vmid=150, mp0=None)).result is True
    # Meanwhile, another salt-call process (its own store over the same rows file) creates CT 160.
    adhoc = grain_context(fresh_cluster, tmp_path)
    assert (
        guest_lifecycle.present(adhoc, LXC, "adhoc-160", False, **declaration(vmid=160, mp0=None)).result
        is True
    )
    assert guest_lifecycle.present(run, LXC, "ct151", False, **declaration(vmid=151, mp0=None)).result is True
    assert sorted(rows(tmp_path)) == [row_key(TARGET, "lxc", v) for v in (150, 151, 160)]


# --------------------------------------------------------------------------------------------
# ad-hoc writes obey ownership
# --------------------------------------------------------------------------------------------


def test_resize_of_a_guest_this_minion_did_not_create_is_refused(fresh_cluster, tmp_path):
    ctx = grain_context(fresh_cluster, tmp_path)
    start = len(fresh_cluster.pve.requests)
    with pytest.raises(Refused, match=r"not recorded as ours .*adopt: true"):
        guest_lifecycle.resize(ctx, LXC, "pve1", DNS1_VMID, "rootfs", "+1G")
    assert writes(requests_since(fresh_cluster, start)) == []


def test_resize_of_an_owned_guest_grows_it(fresh_cluster, tmp_path):
    ctx = grain_context(fresh_cluster, tmp_path)
    assert guest_lifecycle.present(ctx, LXC, "web", False, **declaration(mp0=None)).result is True
    start = len(fresh_cluster.pve.requests)
    assert guest_lifecycle.resize(ctx, LXC, "pve1", "150", "rootfs", "+1G").startswith("UPID:")
    assert [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))] == [
        ("PUT", "/nodes/pve1/lxc/150/resize")
    ]


# --------------------------------------------------------------------------------------------
# writes whose fate is unknown
# --------------------------------------------------------------------------------------------


class LosesAnswer(HTTPAdapter):
    """The real transport, except that the answer to the first ``method`` request whose path ends in
    ``suffix`` is replaced by ``lose(response)`` after fakepve has acted on it."""

    def __init__(self, method: str, suffix: str, lose: Callable[[requests.Response], requests.Response]):
        super().__init__()
        self.method, self.suffix, self.lose, self.fired = method, suffix, lose, 0

    def send(self, request, **kwargs):
        response = super().send(request, **kwargs)
        path = request.path_url.split("?", 1)[0]
        if request.method == self.method and path.endswith(self.suffix) and not self.fired:
            self.fired += 1
            response.content  # noqa: B018 - the real answer is read in full: PVE has acted
            return self.lose(response)
        return response


def status(code: int, body: bytes = b"", content_type: str = "text/html") -> Callable:
    def lose(response: requests.Response) -> requests.Response:
        response.status_code = code
        response.reason = {504: "Gateway Time-out", 596: "Broken pipe", 597: "Connection reset"}.get(
            code, "OK"
        )
        response._content = body
        response.headers["Content-Type"] = content_type
        return response

    return lose


def cut_off(response: requests.Response) -> requests.Response:
    raise requests.exceptions.ChunkedEncodingError("Connection broken: IncompleteRead(12 bytes read)")


def broken_gzip(response: requests.Response) -> requests.Response:
    raise requests.exceptions.ContentDecodingError(
        "Received response with content-encoding: gzip, but failed"
    )


LOST = {
    "504": status(504, b"<html><body>504 Gateway Time-out</body></html>"),
    "596": status(596, b""),
    "597": status(597, b""),
    "html-200": status(200, b"<html><body>Welcome to the portal</body></html>"),
    "chunked": cut_off,
    "gzip": broken_gzip,
}


def session_losing(method: str, suffix: str, how: str) -> requests.Session:
    session = requests.Session()
    session.mount("https://", LosesAnswer(method, suffix, LOST[how]))
    return session


@pytest.mark.parametrize("how", sorted(LOST))
def test_a_create_whose_answer_is_lost_is_uncertain_keeps_its_row_and_is_finished_next_run(
    fresh_cluster, tmp_path, how
):
    ctx = grain_context(fresh_cluster, tmp_path, session_losing("POST", "/nodes/pve1/lxc", how))
    outcome = guest_lifecycle.present(ctx, LXC, "web", False, **declaration())
    text = "\n".join(outcome.comment)
    assert outcome.result is False and "may or may not have acted" in text, text
    assert "Nothing was written" not in text and "pvesh get /nodes/<node>/tasks" in text
    assert f"stays {CREATING}" in text
    assert fresh_cluster.pve.ct(150) is not None, "fakepve acted: the guest is there"
    assert rows(tmp_path)[ROW]["phase"] == CREATING

    next_run_finishes_the_create(fresh_cluster, tmp_path)


def test_a_create_whose_answer_is_lost_and_that_did_not_happen_is_created_next_run(fresh_cluster, tmp_path):
    # Uncertain means either: when the cluster proves the vmid free, the next run creates it.
    def lose_and_undo(response: requests.Response) -> requests.Response:
        fresh_cluster.pve.cts.remove(fresh_cluster.pve.ct(150))
        return status(504)(response)

    session = requests.Session()
    session.mount("https://", LosesAnswer("POST", "/nodes/pve1/lxc", lose_and_undo))
    assert (
        guest_lifecycle.present(
            grain_context(fresh_cluster, tmp_path, session), LXC, "web", False, **declaration()
        ).result
        is False
    )
    again = guest_lifecycle.present(
        grain_context(fresh_cluster, tmp_path), LXC, "web", False, **declaration()
    )
    assert again.result is True and "created" in "\n".join(again.comment), again.comment
    assert rows(tmp_path)[ROW]["phase"] == OWNED


@pytest.mark.parametrize("how", ["504", "html-200", "chunked"])
def test_a_config_put_whose_answer_is_lost_is_uncertain_and_the_next_run_is_clean(
    fresh_cluster, tmp_path, how
):
    assert (
        guest_lifecycle.present(
            grain_context(fresh_cluster, tmp_path), LXC, "web", False, **declaration()
        ).result
        is True
    )
    ctx = grain_context(fresh_cluster, tmp_path, session_losing("PUT", "/lxc/150/config", how))
    outcome = guest_lifecycle.present(ctx, LXC, "web", False, **declaration(memory=2048))
    text = "\n".join(outcome.comment)
    assert outcome.result is False and "may or may not have acted" in text, text
    assert "Nothing was written" not in text
    assert outcome.changes.get("memory") == {"old": "1024", "new": "2048"}, "what may have changed is shown"
    start = len(fresh_cluster.pve.requests)
    again = guest_lifecycle.present(
        grain_context(fresh_cluster, tmp_path), LXC, "web", False, **declaration(memory=2048)
    )
    assert again.result is True and again.changes == {}, again.comment
    assert writes(requests_since(fresh_cluster, start)) == [], "the PUT went through; nothing re-sent"


# --------------------------------------------------------------------------------------------
# rows agree with PVE under concurrency
# --------------------------------------------------------------------------------------------


def test_a_state_run_and_an_adhoc_create_of_one_container_at_once_leave_the_winners_row(
    fresh_cluster, tmp_path, monkeypatch
):
    """Two processes (each its own store over the same rows file) both find CT 150 absent and decide
    to create it. The state run records ``creating``, creates it and records it ``owned``; only then
    does the ad-hoc call reach its ``mark_creating``. It finds a row it did not read (re-read under the
    lock) and refuses: nothing is sent, and the winner's row stays. (Before, it overwrote the row, PVE
    refused its POST, and it put back its stale "no row": the container was left unowned.)"""
    import threading

    from salt_proxmox.ownership.keeper import Ownership

    real = Ownership.mark_creating
    adhoc_decided, run_done = threading.Event(), threading.Event()

    def mark_creating(self, *args, **kwargs):
        if threading.current_thread().name == "adhoc":
            adhoc_decided.set()
            assert run_done.wait(30), "the state run did not finish"
        else:
            assert adhoc_decided.wait(30), "the ad-hoc call did not decide"
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Ownership, "mark_creating", mark_creating)
    outcomes: dict = {}

    def run(name: str) -> None:
        try:
            outcomes[name] = guest_lifecycle.present(
                grain_context(fresh_cluster, tmp_path), LXC, name, False, **declaration()
            )
        finally:
            if name == "run":
                run_done.set()

    start = len(fresh_cluster.pve.requests)
    threads = [threading.Thread(target=run, args=(name,), name=name) for name in ("run", "adhoc")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert outcomes["run"].result is True, outcomes["run"].comment
    lost = "\n".join(outcomes["adhoc"].comment)
    assert outcomes["adhoc"].result is False and "was not set to creating" in lost, lost
    assert "Another run or salt-call changed it" in lost and "Nothing was written" in lost
    assert [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))] == [
        ("POST", "/nodes/pve1/lxc")
    ]
    row = rows(tmp_path)[ROW]
    assert row["phase"] == OWNED and row["state_id"] == "run", "the container keeps the winner's row"
