"""Cluster members answering the PVE client as a transport adapter (requests' BaseAdapter), and the
credential and checks the client's unit tests share."""

from __future__ import annotations

import http
import json
from collections.abc import Callable

import requests
from requests.adapters import BaseAdapter

from salt_proxmox.pve.client import Credential, PveClient, Target

SECRET = "5e1f2c3a-0000-4bad-beef-5ecre7000001"
CREDENTIAL = Credential(
    "salt@pve!provision", SECRET, role="provision", lease_id="lease/abc", lease_seconds=300
)


MEMBERS = ("https://pve1:8006", "https://pve2:8006")
UPID = "UPID:pve1:0000ABCD:00001234:65F00000:vzcreate:150:salt@pve!provision:"


Answer = Callable[[requests.PreparedRequest], requests.Response]


def respond(
    request: requests.PreparedRequest, status: int = 200, body: object = None, reason: str = ""
) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    known = status in http.HTTPStatus._value2member_map_
    response.reason = reason or (http.HTTPStatus(status).phrase if known else "Broken pipe")
    response._content = body if isinstance(body, bytes) else json.dumps(body).encode()
    response.headers["Content-Type"] = "application/json;charset=UTF-8"
    response.encoding = "utf-8"
    response.url = request.url
    response.request = request
    return response


def answers(status: int = 200, body: object = None, reason: str = "") -> Answer:
    return lambda request: respond(request, status, body, reason)


class Member(BaseAdapter):
    """One cluster member: answers each request with the next scripted answer (the last repeats)."""

    def __init__(self, *script: Answer):
        super().__init__()
        self.script = list(script)
        self.seen: list[dict] = []

    def send(self, request, stream=False, timeout=None, verify=True, cert=None, proxies=None):
        self.seen.append({"request": request, "timeout": timeout, "verify": verify})
        answer = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        return answer(request)

    def close(self) -> None:
        pass


def client_with(*members: Member, verify: bool | str = True, timeout: float = 7.0) -> PveClient:
    session = requests.Session()
    for url, member in zip(MEMBERS, members, strict=False):
        session.mount(url, member)
    target = Target("homelab", MEMBERS[: len(members)], verify=verify, timeout=timeout)
    return PveClient(target, session)


def no_secret(*texts: object) -> None:
    for text in texts:
        assert SECRET not in str(text)
        assert SECRET not in repr(text)
        assert "lease/abc" not in str(text)
