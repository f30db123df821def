"""Downloaded files (``proxmox_content``) against the served fake cluster, whose downloads are
``tests.support.content.ContentPve`` (pve-storage ``API2/Storage/Status.pm`` ``download_url`` over
pve-common ``Tools.pm`` ``download_file_from_url``): a plan only reads, an apply downloads what it showed on
each node a storage that is not shared needs, a second plan is clean; a changed checksum is a re-download
refused unless ``replace: true``; a failed checksum is the task's error with its log; a VM's CD-ROM keeps
the file."""

from __future__ import annotations

import hashlib

from salt_proxmox.content.lifecycle import absent, present
from salt_proxmox.ownership.stores import MemoryStore
from tests.support.guests import make_context, requests_since, static_targets, writes

URL = "https://cdimage.example.org/debian-13-netinst.iso"
BODY = b"an installer image\n" * 64
SHA = hashlib.sha256(BODY).hexdigest()
ISO = {"storage": "local", "content": "iso", "filename": "debian-13.iso", "url": URL, "checksum": SHA,
       "checksum-algorithm": "sha256"}  # fmt: skip


def _ctx(served):
    served.pve.content_urls[URL] = BODY
    return make_context(static_targets(served), store=MemoryStore())


def test_an_iso_is_downloaded_on_each_node_of_a_local_storage_and_replans_clean(fresh_cluster):
    pve = fresh_cluster.pve
    nodes = sorted(pve.nodes)
    ctx = _ctx(fresh_cluster)
    start = len(pve.requests)
    plan = present(ctx, True, "iso", name="iso", **ISO)
    assert plan.result is None, plan.comment
    assert writes(requests_since(fresh_cluster, start)) == [], "a plan never writes"
    assert set(plan.changes) == set(nodes)
    # query_url_metadata's size is in the plan.
    # query_url_metadata needs Sys.Audit+Sys.Modify on / or Sys.AccessNetwork on the node: the read token
    # holds neither, so the plan says why the size is unknown, and shows it once the token may.
    assert any("size is not known" in line and "403" in line for line in plan.comment), plan.comment
    pve.grant(fresh_cluster.seeded.read_token[0], f"/nodes/{nodes[0]}", "Sys.AccessNetwork")
    plan = present(ctx, True, "iso", name="iso", **ISO)
    assert any(f"{len(BODY)} bytes" in line for line in plan.comment), plan.comment
    start = len(pve.requests)
    done = present(ctx, False, "iso", name="iso", **ISO)
    assert done.result is True, done.comment
    assert done.changes == plan.changes
    posts = [w for w in writes(requests_since(fresh_cluster, start)) if w[1].endswith("/download-url")]
    assert len(posts) == len(nodes)
    assert pve.storages["local"]["volumes"]["iso/debian-13.iso"]["size"] == len(BODY)
    again = present(ctx, True, "iso", name="iso", **ISO)
    assert (again.result, again.changes) == (True, {}), again.comment


def test_a_download_without_checksum_is_refused_unless_verify_false(fresh_cluster):
    ctx = _ctx(fresh_cluster)
    bare = {k: v for k, v in ISO.items() if not k.startswith("checksum")}
    said = present(ctx, True, "iso", name="iso", **bare)
    assert said.result is False and any("checksum:" in line and "boot" in line for line in said.comment)
    assert present(ctx, True, "iso", name="iso", **bare, verify=False).result is None


def test_a_checksum_mismatch_fails_the_task_with_its_log_and_stores_nothing(fresh_cluster):
    ctx = _ctx(fresh_cluster)
    wrong = {**ISO, "checksum": "0" * 64}
    done = present(ctx, False, "iso", name="iso", **wrong)
    assert done.result is False
    text = "\n".join(done.comment)
    # Tools.pm download_file_from_url: "checksum mismatch: got '<got>' != expect '<expected>'".
    assert "checksum mismatch" in text and "log ends" in text, text
    assert "iso/debian-13.iso" not in fresh_cluster.pve.storages["local"].get("volumes", {})


def test_a_changed_checksum_is_a_re_download_refused_unless_replace_and_never_under_a_cdrom(fresh_cluster):
    pve = fresh_cluster.pve
    ctx = _ctx(fresh_cluster)
    assert present(ctx, False, "iso", name="iso", **ISO).result is True
    newer = BODY + b"v2"
    pve.content_urls[URL] = newer
    changed = {**ISO, "checksum": hashlib.sha256(newer).hexdigest()}
    # PVE would die "checksum mismatch ... aborting" over the file that is there: a delete is needed.
    refused = present(ctx, True, "iso", name="iso", **changed)
    assert refused.result is False and any("replace: true" in line for line in refused.comment)
    plan = present(ctx, True, "iso", name="iso", **changed, replace=True)
    assert plan.result is None and "source" in plan.changes, plan.comment
    done = present(ctx, False, "iso", name="iso", **changed, replace=True)
    assert done.result is True, done.comment
    assert pve.storages["local"]["volumes"]["iso/debian-13.iso"]["size"] == len(newer)
    assert present(ctx, True, "iso", name="iso", **changed, replace=True).changes == {}


def test_a_file_not_downloaded_here_is_adopted_only_when_declared(fresh_cluster):
    pve = fresh_cluster.pve
    ctx = _ctx(fresh_cluster)
    pve.store_file("local", "debian-13.iso", len(BODY))
    said = present(ctx, True, "iso", name="iso", **ISO)
    assert said.result is False and any("adopt: true" in line for line in said.comment)
    adopted = present(ctx, False, "iso", name="iso", **ISO, adopt=True)
    assert adopted.result is True and adopted.changes == {"ownership": {"old": None, "new": "owned"}}


def test_destroy_deletes_an_owned_file_and_retain_forgets_it(fresh_cluster):
    pve = fresh_cluster.pve
    ctx = _ctx(fresh_cluster)
    names = {"storage": "local", "content": "iso", "filename": "debian-13.iso"}
    assert present(ctx, False, "iso", name="iso", **ISO).result is True
    plan = absent(ctx, True, "iso", name="iso", removal="destroy", **names)
    assert plan.result is None and plan.changes
    done = absent(ctx, False, "iso", name="iso", removal="destroy", **names)
    assert done.result is True, done.comment
    assert "iso/debian-13.iso" not in pve.storages["local"].get("volumes", {})


def test_a_failed_listing_is_never_absence(fresh_cluster):
    pve = fresh_cluster.pve
    ctx = _ctx(fresh_cluster)
    pve.fail("GET", "/storage/local/content", status=500, message="storage read timeout")
    said = present(ctx, True, "iso", name="iso", **ISO)
    assert said.result is False and any("Nothing was written" in line for line in said.comment)


def test_a_compressed_iso_is_downloaded_with_its_compression(
    fresh_cluster,
):
    """download_url takes compression (Plugin.pm KNOWN_COMPRESSION_FORMATS), decompressing ISOs only
    (its worker: decompression not supported for <content>)."""
    pve = fresh_cluster.pve
    ctx = _ctx(fresh_cluster)
    zst = URL + ".zst"
    pve.content_urls[zst] = b"(zstd) " + BODY
    packed = {**ISO, "url": zst, "checksum": hashlib.sha256(pve.content_urls[zst]).hexdigest(),
              "compression": "zst"}  # fmt: skip
    done = present(ctx, False, "iso", name="iso", **packed)
    assert done.result is True, done.comment
    assert pve.storages["local"]["volumes"]["iso/debian-13.iso"]["size"] == len(pve.content_urls[zst])
    assert present(ctx, True, "iso", name="iso", **packed).changes == {}


def test_a_destroy_finding_no_file_succeeds_and_one_finding_a_file_not_ours_is_refused(fresh_cluster):
    """Without a row (destroyed by an earlier run, or forgotten) nothing says where the file was
    downloaded: absent reads each node the storage is enabled on (pve-storage API2/Storage/Content.pm
    index, as download_url's storage_check_enabled picks them), so a destroy applied twice is clean and
    a file found is still refused as not ours."""
    pve = fresh_cluster.pve
    ctx = _ctx(fresh_cluster)
    names = {"storage": "local", "content": "iso", "filename": "debian-13.iso"}
    assert present(ctx, False, "iso", name="iso", **ISO).result is True
    assert absent(ctx, False, "iso", name="iso", removal="destroy", **names).result is True
    for test in (True, False):
        start = len(pve.requests)
        again = absent(ctx, test, "iso", name="iso", removal="destroy", **names)
        assert (again.result, again.changes) == (True, {}), again.comment
        assert writes(requests_since(fresh_cluster, start)) == []
    pve.store_file("local", "debian-13.iso", len(BODY))
    refused = absent(ctx, True, "iso", name="iso", removal="destroy", **names)
    assert refused.result is False and any("adopt: true" in line for line in refused.comment), refused.comment
