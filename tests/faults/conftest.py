"""Fixtures of the fault matrix: a sealed OpenBao of its own (sealing the session's would break every
other test that mints from it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.openbao import CREDS_PATH, DevOpenBao, creds_token


@pytest.fixture(scope="session")
def sealed_openbao() -> Iterator[dict[str, object]]:
    """A dev OpenBao holding a valid creds token, then sealed: ``{"url", "token", "path", "secrets"}``."""
    with DevOpenBao() as bao:
        root = bao.client()
        token = creds_token(root)
        secrets = [bao.root_token, token]
        root.sys.seal()
        yield {"url": bao.url, "token": token, "path": CREDS_PATH, "secrets": secrets}
