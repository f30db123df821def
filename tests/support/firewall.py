"""Another administrator of the fake cluster's firewall: a token allowed to edit every firewall scope, and
a caller that sends its writes as PVE's API takes them (form bodies), for tests that change the firewall
behind this product's back."""

from __future__ import annotations

import secrets
from collections.abc import Callable

import requests

from tests.support.cluster import ServedCluster

ADMIN = "fw-admin@pve!edit"


def firewall_admin(cluster: ServedCluster) -> Callable[..., None]:
    """``call(method, path, **form)`` as token ``ADMIN`` (Sys.Modify, Sys.Audit, VM.Config.Network and
    VM.Audit on ``/``) against ``cluster`` (a served fakepve); asserts HTTP 200."""
    secret = secrets.token_hex(16)
    cluster.pve.apitokens[ADMIN] = secret
    cluster.pve.grant(ADMIN, "/", "Sys.Modify", "Sys.Audit", "VM.Config.Network", "VM.Audit")

    def call(method: str, path: str, **data: str) -> None:
        answer = requests.request(
            method,
            f"{cluster.url}/api2/json/{path}",
            data=data,
            headers={"Authorization": f"PVEAPIToken={ADMIN}={secret}"},
            verify=cluster.cafile,
            timeout=10,
        )
        assert answer.status_code == 200, answer.text

    return call
