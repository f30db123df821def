"""OpenBao ACL policies (``openbao_policy``): the pure half — names, assembly, comparison, plan text.

Source: OpenBao 2.6 (git df6ce2c) ``internal/vault/policy/policy_store.go`` and
``internal/vault/logical_system.go`` (``handlePoliciesRead/Set/Delete``); measured against the
``bao`` 2.x dev server of the test suite.

- **Names** are keyed in lower case: ``handlePoliciesSet`` stores ``strings.ToLower(name)`` and
  ``PolicyStore.sanitizeName`` lower-cases (and trims) every name it reads, sets or deletes. So
  ``Salt-Proxmox-Creds`` and ``salt-proxmox-creds`` are one policy; ``policy_key`` gives the key.
  ``root`` and ``response-wrapping`` cannot be written (``immutablePolicies``); ``default`` cannot
  be deleted. A name may hold ``/`` (``jenkins/dev/master``): the route is ``sys/policy/(?P<name>.+)``
  and policies list by prefix. OpenBao's HTTP layer cleans the request path first, so an empty
  segment, a ``.`` or ``..`` segment, or a leading or trailing ``/`` is stored under another name
  (measured on the dev server: ``a//b`` → ``a/b``, ``/x`` → ``x``, ``a/../b`` → ``b``, ``../x``
  refused). This product keeps each ``/``-separated segment to ``[A-Za-z0-9][A-Za-z0-9._-]*``, so
  the name declared is the name stored.
- **Text** is stored verbatim (``Policy.Raw``) and read back as ``rules``; it is compared by the
  sha256 of its bytes (UTF-8). Two facts shape the assembly:
  ``handlePoliciesSet`` refuses an empty text (``'policy' parameter not supplied or empty``), and
  it first tries to base64-decode the text and stores the decoding when that works (Go's
  ``StdEncoding`` ignores ``\\r``/``\\n``): a text ``"\\n"`` is stored as ``""``. So an assembly that
  is only white space is refused, as is one that is valid base64 — OpenBao would store
  something else. An existing policy with an empty text still occupies its name.
- **Assembly**: each fragment's text with its trailing white space removed, empty fragments
  skipped, joined by one blank line, ending in one newline. Fragments are inline HCL strings or
  ``salt://`` files, which the Salt module fetches (``cp.get_file_str``) through ``fetch``.
- **Grammar**: OpenBao parses the text before storing it (``internal/vault/policy/policy.go``
  ``ParseACLPolicyWithTemplating``, HCL 1): ``grammar_problems`` refuses at plan a text that does not
  parse, a top-level key but ``name``/``path``, and a capability outside OpenBao's list, naming the
  fragment and line.
- **Grants**: the plan counts ``path "..."`` blocks (HCL) or the keys of ``"path"`` (a JSON
  policy) before and after, and shows a unified diff of the text. Policy text is not secret; it
  never goes to grains all the same (the row keeps its sha256 only).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from salt_proxmox.errors import DeclarationError, boolean_problem
from salt_proxmox.outcome import text_diff
from salt_proxmox.ownership.rows import removal_problem

FAMILY = "policy"
#: One ``/``-separated segment OpenBao stores as sent (no empty, ``.`` or ``..`` segment).
SEGMENT = r"[A-Za-z0-9][A-Za-z0-9._-]*"
NAME = re.compile(rf"^{SEGMENT}(?:/{SEGMENT})*\Z")
#: ``immutablePolicies``: SetPolicy answers ``cannot update "<name>" policy``.
IMMUTABLE = ("root", "response-wrapping")
#: DeletePolicy refuses these.
UNDELETABLE = ("default", *IMMUTABLE)
_GRANT = re.compile(r'^[ \t]*path[ \t]+"', re.MULTILINE)
SALT_URL = "salt://"


def policy_key(name: str) -> str:
    """The key OpenBao files a policy under (``sanitizeName``: trimmed, lower case)."""
    return name.strip().lower()


def check_name(name: object, key: str = "name") -> str:
    """The policy key of ``name``. Raises DeclarationError naming ``key`` and the rule."""
    if not isinstance(name, str) or not NAME.match(name):
        raise DeclarationError(
            f"{key}: {name!r} is not a policy name: segments of [A-Za-z0-9][A-Za-z0-9._-]* joined by / "
            "(OpenBao cleans an empty, . or .. segment and a leading or trailing / out of the path, "
            "so it would store another name)"
        )
    folded = policy_key(name)
    if folded in IMMUTABLE:
        raise DeclarationError(f"{key}: OpenBao does not let anyone write the {folded!r} policy")
    return folded


def sha256(text: str) -> str:
    """Hex sha256 of the text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def grants(text: str | None) -> int | None:
    """How many ``path`` blocks the policy has (None for no policy)."""
    if text is None:
        return None
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            paths = json.loads(stripped).get("path")
        except (ValueError, AttributeError):
            paths = None
        if isinstance(paths, dict):
            return len(paths)
    return len(_GRANT.findall(text))


def unified_diff(name: str, old: str | None, new: str) -> str:
    """A unified diff of the policy text, ``old`` (live, None when absent) to ``new``."""
    return text_diff(old, new, f"{name} (OpenBao)", f"{name} (declared)")


@dataclass(frozen=True)
class Fragment:
    """One piece of a policy: ``origin`` names it in messages (``fragments[0]`` or its
    ``salt://`` URL); ``text`` is its HCL."""

    origin: str
    text: str


def fragments_from(raw: object, fetch: Callable[[str], object] | None = None) -> list[Fragment]:
    """The declared ``fragments`` as Fragment objects, in order.

    ``raw``: a list whose items are inline HCL strings or ``salt://`` URLs; ``fetch(url)``
    returns a file's text (falsy when there is no such file). Raises DeclarationError naming
    the item: not a list, an item that is not text, a ``salt://`` file that is missing or cannot
    be fetched here."""
    if isinstance(raw, str) or not isinstance(raw, Sequence) or not raw:
        raise DeclarationError("fragments: expected a non-empty list of HCL strings or salt:// files")
    out = []
    for index, item in enumerate(raw):
        where = f"fragments[{index}]"
        if isinstance(item, Fragment):
            out.append(item)
            continue
        if not isinstance(item, str):
            raise DeclarationError(f"{where}: expected HCL text or a salt:// URL, got {type(item).__name__}")
        if item.startswith(SALT_URL):
            if fetch is None:
                raise DeclarationError(f"{where}: {item} can only be read through Salt (cp.get_file_str)")
            text = fetch(item)
            if text is False or text is None:
                raise DeclarationError(f"{where}: {item} was not found on the Salt file server")
            if not isinstance(text, str):
                raise DeclarationError(f"{where}: {item} is not a text file")
            out.append(Fragment(item, text))
        else:
            out.append(Fragment(where, item))
    return out


def assemble(fragments: Sequence[Fragment]) -> str:
    """The policy text: fragments without trailing white space, empty ones skipped, joined by
    one blank line, ending in one newline (``''`` when every fragment is empty)."""
    parts = [fragment.text.rstrip() for fragment in fragments if fragment.text.strip()]
    return "\n\n".join(parts) + "\n" if parts else ""


def assembly_problem(text: str) -> str | None:
    """Why OpenBao would not store ``text`` as it is, or None."""
    if not text.strip():
        return (
            "the assembled policy is empty: every fragment is empty or white space, and an empty policy is "
            "refused rather than written"
        )
    compact = text.replace("\r", "").replace("\n", "")
    try:
        base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        return None
    return (
        "the assembled policy is valid base64, so OpenBao would store its decoding instead "
        "(logical_system.go handlePoliciesSet); write it as HCL"
    )


#: OpenBao's capabilities (``internal/vault/policy/policy.go`` ``parsePaths``: deny, create, read,
#: update, delete, list, sudo, patch, scan; anything else is "invalid capability") and the
#: old-style ``policy`` values it maps to them (deny, read, write, sudo).
CAPABILITIES = ("deny", "create", "read", "update", "delete", "list", "sudo", "patch", "scan")
OLD_POLICIES = ("deny", "read", "write", "sudo")
#: ``ParseACLPolicyWithTemplating``: ``CheckHCLKeys(list, ["name", "path"])``.
TOP_LEVEL_KEYS = ("name", "path")


def _where(fragments: Sequence[Fragment], line: int) -> str:
    """``fragments[i] line n`` for line ``line`` (1-based) of the assembly of ``fragments``."""
    start = 1
    for fragment in fragments:
        text = fragment.text.rstrip()
        if not text.strip():
            continue
        count = text.count("\n") + 1
        if line < start + count:
            return f"{fragment.origin} line {line - start + 1}"
        start += count + 1  # the blank line between fragments
    return f"line {line}"


def _line_of(text: str, needle: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    return 1


def grammar_problems(fragments: Sequence[Fragment]) -> list[str]:
    """What OpenBao's policy parser (``ParseACLPolicyWithTemplating``, HCL 1 through pyhcl, the
    same grammar) would refuse in the assembly of ``fragments``: a text that does not parse, a
    top-level key but ``name``/``path``, a capability or old-style ``policy`` OpenBao does not
    know. One sentence each, naming the fragment and its line. Empty when pyhcl is not installed
    (the formula's minimal install): OpenBao's own answer then says it, at apply."""
    try:
        import hcl  # pyhcl
    except ImportError:  # pragma: no cover - pyhcl is an install requirement of the package
        return []
    text = assemble(fragments)
    try:
        tree = hcl.loads(text)
    except ValueError as exc:
        match = re.match(r"Line (\d+), column \d+: (.*)", str(exc))
        where = _where(fragments, int(match.group(1))) if match else "the assembly"
        why = match.group(2) if match else str(exc)
        return [f"fragments: {where}: OpenBao cannot parse it (failed to parse policy: {why})"]
    if not isinstance(tree, dict):
        return ["fragments: OpenBao cannot parse it (failed to parse policy: does not contain a root object)"]
    problems = [
        f"fragments: {_where(fragments, _line_of(text, key))}: invalid key {key!r}; a policy holds only path "
        "blocks (and a name)"
        for key in tree
        if key not in TOP_LEVEL_KEYS
    ]
    paths = tree.get("path", {})
    blocks = paths.items() if isinstance(paths, dict) else []
    for path, rules in blocks:
        rules = rules if isinstance(rules, dict) else {}
        capabilities = rules.get("capabilities", [])
        for capability in capabilities if isinstance(capabilities, list) else [capabilities]:
            if capability not in CAPABILITIES:
                line = _line_of(text, f'"{capability}"')
                problems.append(
                    f"fragments: {_where(fragments, line)}: path {path!r}: invalid capability {capability!r} "
                    f"(OpenBao knows {', '.join(CAPABILITIES)})"
                )
        old = rules.get("policy")
        if old is not None and old not in OLD_POLICIES:
            problems.append(
                f"fragments: {_where(fragments, _line_of(text, f'{old}'))}: path {path!r}: invalid policy "
                f"{old!r} (OpenBao knows {', '.join(OLD_POLICIES)})"
            )
    return problems


@dataclass(frozen=True)
class PolicyDeclaration:
    """One checked ``openbao_policy.present`` declaration.

    ``name`` as declared; ``key`` as OpenBao keys it; ``text`` the assembly; ``digest`` its
    sha256; ``rename_from`` the old key (None: no rename); ``removal`` what happens to the old
    policy of a rename (``retain``: left in place; ``destroy``: deleted when it still holds
    what this minion last wrote)."""

    state_id: str
    name: str
    key: str
    text: str
    digest: str
    fragments: int
    adopt: bool = False
    removal: str = "retain"
    rename_from: str | None = None

    def stored(self) -> dict[str, object]:
        """The ownership row's declaration: name, sha256 and fragment count — never the text."""
        return {"name": self.key, "sha256": self.digest, "fragments": self.fragments}


def parse_declaration(
    state_id: str,
    name: object,
    fragments: object,
    adopt: object = False,
    removal: object = "retain",
    rename_from: object = None,
    fetch: Callable[[str], object] | None = None,
    **extra: object,
) -> PolicyDeclaration:
    """Check a declaration and assemble its text. Raises DeclarationError naming each key."""
    problems: list[str] = []
    if extra:
        problems.append(
            f"unknown key(s) {', '.join(sorted(extra))}: a policy has name, fragments, adopt, removal, "
            "rename_from"
        )
    key = ""
    try:
        key = check_name(name)
    except DeclarationError as exc:
        problems += exc.problems
    old = None
    if rename_from is not None:
        try:
            old = check_name(rename_from, "rename_from")
        except DeclarationError as exc:
            problems += exc.problems
    problems += filter(None, (boolean_problem("adopt", adopt), removal_problem(removal)))
    if removal == "destroy" and old in UNDELETABLE:
        problems.append(
            f"rename_from: OpenBao does not let anyone delete the {old!r} policy; use removal: retain"
        )
    text = ""
    parts: list[Fragment] = []
    try:
        parts = fragments_from(fragments, fetch)
        text = assemble(parts)
        problem = assembly_problem(text)
        if problem:
            problems.append(f"fragments: {problem}")
        else:
            problems += grammar_problems(parts)
    except DeclarationError as exc:
        problems += exc.problems
    if problems:
        raise DeclarationError(problems)
    return PolicyDeclaration(
        state_id=state_id,
        name=str(name),
        key=key,
        text=text,
        digest=sha256(text),
        fragments=len(parts),
        adopt=bool(adopt),
        removal=str(removal),
        rename_from=old,
    )
