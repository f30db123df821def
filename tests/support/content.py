"""The fake cluster's downloads as PVE makes them: ``download-url`` with PVE's checks of a file that is
there and of the checksum, and ``query-url-metadata``.

fakepve 0.5.0's ``download-url`` fetches nothing and stores a file entry of a size of its own
(``size``, 1 MiB by default) whatever is there already; it takes only Sys.Audit with Sys.Modify on ``/``
(PVE also takes Sys.AccessNetwork on ``/nodes/{node}``: pve-storage ``API2/Storage/Status.pm``
``download_url`` permissions); and it answers no ``query-url-metadata``. ``ContentPve`` serves the URLs
of ``content_urls`` (``{url: bytes}``, what a test or the demo says each URL holds; nothing is fetched)
and does, in the task, what pve-common ``src/PVE/Tools.pm`` ``download_file_from_url`` does:

- a file that is there: with a checksum whose hash of the file matches, "OK, got correct file already,
  no need to download" and nothing written; a mismatch dies "checksum mismatch: got '<got>' != expect
  '<expected>', aborting"; without a checksum "refusing to override existing file '<path>'";
- a URL that answers nothing: ``wget``'s failure, "download failed: ..." (``run_command`` errmsg);
- a downloaded body whose hash is not the declared checksum: "checksum mismatch: got ... != expect ...",
  nothing stored.

fakepve 0.5.0 also answers any ``compression`` with a 500: its schema is the published API dump's, whose
``compression`` has ``enum: null``, and its validator iterates that. ``ContentPve`` checks it as
``download_url`` does instead: one of pve-storage ``Plugin.pm`` ``KNOWN_COMPRESSION_FORMATS``, and in the
worker ``decompression not supported for <content>`` for anything but an ISO (the fake stores the body
as downloaded: nothing is decompressed).

``query-url-metadata`` (pve-manager ``PVE/API2/Nodes.pm`` ``query_url_metadata``) answers the URL's
``size`` and ``filename`` (its last path part), ``invalid server response: '404 Not Found'`` for another.
"""

from __future__ import annotations

import hashlib

from fakepve.model import TaskError
from fakepve.routing import die, param_error

#: pve-storage ``Plugin.pm`` ``KNOWN_COMPRESSION_FORMATS``: what ``download_url`` decompresses.
COMPRESSIONS = ("gz", "lzo", "zst", "bz2")


class ContentPve:
    """A mixin of the served fake: downloads checked as PVE checks them (module docstring)."""

    @property
    def content_urls(self) -> dict[str, bytes]:
        """``{url: bytes}``: what each URL serves (made on first use: not every mixin's ``__init__``
        chains)."""
        return self.__dict__.setdefault("_content_urls", {})

    def _routes_content(self):
        return [("GET", "/nodes/{node}/query-url-metadata", self._content_url_metadata)]

    async def _content_url_metadata(self, v, user):
        if not (
            self.allowed(user, "/", "Sys.Audit") and self.allowed(user, "/", "Sys.Modify")
        ) and not self.allowed(user, f"/nodes/{v['node']}", "Sys.AccessNetwork"):
            self.require(user, "/", "Sys.Modify")
        body = self.content_urls.get(v["url"])
        if body is None:
            raise die("invalid server response: '404 Not Found'")
        name = v["url"].split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        return {"size": len(body), "filename": name, "mimetype": "application/octet-stream"}

    async def _download_url(self, request):
        from fakepve.server import params

        p = dict(await params(request))
        url, content, filename = p.get("url"), p.get("content"), p.get("filename")
        sid = request.match_info["storage"]
        body = self.content_urls.get(str(url))
        volname = f"{content}/{filename}"
        there = sid in self.storages and volname in self.storages[sid].get("volumes", {})
        algorithm, checksum = p.get("checksum-algorithm"), p.get("checksum")
        expected = str(checksum).lower() if checksum else None
        compression = p.get("compression")
        if compression is not None and compression not in COMPRESSIONS:
            raise param_error(
                compression=f"value '{compression}' does not have a value in the enumeration "
                f"'{', '.join(COMPRESSIONS)}'"
            )
        subdir = "import" if content == "import" else f"template/{content}"
        dest = f"{self.storages.get(sid, {}).get('path', '/var/lib/vz')}/{subdir}/{filename}"
        original = super()._download_url  # type: ignore[misc]
        fake = self

        def got(data: bytes) -> str:
            return hashlib.new(str(algorithm), data).hexdigest()

        async def check_then_store(node, kind, ident, user, work, **kw):
            async def body_():
                if compression and content != "iso":
                    raise TaskError(f"decompression not supported for {content}")
                if there:
                    old = fake.storages[sid]["volumes"][volname].get("data")
                    if expected:
                        have = got(old or b"")
                        if have == expected:
                            return None  # "OK, got correct file already, no need to download"
                        raise TaskError(f"checksum mismatch: got '{have}' != expect '{expected}', aborting")
                    raise TaskError(f"refusing to override existing file '{dest}'")
                if body is None:
                    raise TaskError("download failed: wget exited with code 8 (404 Not Found)")
                if expected and got(body) != expected:
                    raise TaskError(f"checksum mismatch: got '{got(body)}' != expect '{expected}'")
                await work()
                fake.storages[sid]["volumes"][volname].update(size=len(body), data=body)
                return None

            return await task(node, kind, ident, user, body_, **kw)

        task, verify = self.task, self._verify
        self.task = check_then_store  # type: ignore[method-assign]
        # compression is checked above: fakepve's validator fails on its enum (module docstring).
        self._verify = lambda request, values, drop=(): verify(request, values, (*drop, "compression"))  # type: ignore[method-assign]
        try:
            return await original(request)
        finally:
            del self.task, self._verify
