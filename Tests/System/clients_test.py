"""The `clients` system check (scripts/test-system clients): the service as an integrator meets it.

1. Generates a Python client with openapi-python-client from the spec the live service serves, and pydantic models
   with datamodel-code-generator from the same spec. Either generator printing anything but its progress line (a
   warning about the spec, a piece it could not type) fails the check.
2. Drives the whole flow through the generated client alone, asserting on typed fields: login with an access
   token and through the code flow, status, the owner's list, switching the active account, the picture as bytes
   and as JSON, a login URL, a Facebook Login for Business login (a login URL with `config_id`, the dialog, the
   code flow, the granted assets in `token.granular_scopes`), a system user's token refused with
   `unsupported_token_type`, the events feed, the token reveal, an error, logout with revoke, the audit log, the
   app with its Graph version as Facebook served it, and a Limited Login (a nonce, the login, the token refreshed
   as iOS SDK 18.1 does, its replay refused, logout).
3. Validates every answer of that flow against the pydantic models: JSON bodies against the operation's schema
   (errors against Error), and the X-Request-Id, ETag and Retry-After headers against their named schemas. An
   answer the flow did not validate fails the check.

Only the browser's part of the code flow (the login dialog), the test users and the SDK's Limited Login tokens
(the emulator's control API) are reached without the generated client. Needs FBS_URL, FBS_API_KEY (sessions, events, tokens:read, audit) and
FBS_EMULATOR_URL; the argument is a scratch directory. Prints no token or key.

Usage: clients_test.py WORKDIR
"""

import importlib
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

# openapi-python-client's progress line ("Generating <output path>"); anything else either generator prints is a
# finding: a warning about the spec, or a piece it could not generate.
GENERATOR_PROGRESS = re.compile(r"Generating \S+")
DEMO_APP_ID = "1000000000000001"
# A Facebook Login for Business configuration the emulator is told about (digits, as Facebook's ids are).
BUSINESS_CONFIG_ID = "4242424242424242"
BUSINESS_PAGES = ["20000000000000001", "20000000000000002"]


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """Keeps a 302 as the answer, so that the dialog's redirect can be read."""

    def redirect_request(self, *args, **kwargs):
        return None


def emulator(method, path, body=None):
    """A control-API call to the Graph emulator (test setup, not the service)."""
    request = urllib.request.Request(
        os.environ["FBS_EMULATOR_URL"] + "/__emulator/" + path, method=method,
        data=None if body is None else json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


def approve_in_dialog(url, user_id):
    """What the person's browser does: approve the login dialog at `url` as `user_id`; returns the redirect."""
    parts = urllib.parse.urlsplit(url)
    fields = dict(urllib.parse.parse_qsl(parts.query))
    form = {key: fields[key] for key in (
        "client_id", "redirect_uri", "state", "scope", "response_type", "config_id", "override_default_response_type",
    ) if key in fields}
    form.update({"user_id": user_id, "action": "approve"})
    if "auth_type" in fields:
        form["auth_type"] = fields["auth_type"]
    request = urllib.request.Request(
        urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")),
        data=urllib.parse.urlencode(form).encode(), method="POST")
    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(request, timeout=10)
    except urllib.error.HTTPError as redirect:
        if redirect.code == 302:
            return redirect.headers["Location"]
        raise
    raise AssertionError("the dialog did not redirect")


def generate(work, spec_path):
    """Runs both generators; returns the imported client package and models module, or raises with their output."""
    client_dir = work / "client"
    done = subprocess.run(
        ["openapi-python-client", "generate", "--path", str(spec_path), "--output-path", str(client_dir),
         "--overwrite"], capture_output=True, text=True, check=False)
    printed = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    print(f"openapi-python-client {version('openapi-python-client')} printed: {printed}")
    extra = [line for line in printed if not GENERATOR_PROGRESS.fullmatch(line.strip())]
    if done.returncode != 0 or extra:
        raise AssertionError("openapi-python-client printed more than its progress:\n" + done.stdout + done.stderr)
    models_path = work / "models.py"
    done = subprocess.run(
        ["datamodel-codegen", "--input", str(spec_path), "--input-file-type", "openapi", "--output",
         str(models_path), "--output-model-type", "pydantic_v2.BaseModel", "--formatters", "builtin"],
        capture_output=True, text=True, check=False)
    printed = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    print(f"datamodel-code-generator {version('datamodel-code-generator')} printed: {printed}")
    if done.returncode != 0 or printed:
        raise AssertionError("datamodel-codegen printed:\n" + done.stdout + done.stderr)
    sys.path.insert(0, str(client_dir))
    sys.path.insert(0, str(work))
    return importlib.import_module("fbsessiond_client"), importlib.import_module("models")


def version(package):
    from importlib.metadata import version as installed
    return installed(package)


def login_models_exclusive(models):
    """The generated login model takes each kind of credential and refuses a body that mixes them."""
    import pydantic
    state = "A" * 43
    models.LoginRequest.model_validate({"owner": "o", "access_token": "EAAx"})
    models.LoginRequest.model_validate({"owner": "o", "code": "AQx", "state": state})
    for mixed in ({"owner": "o", "access_token": "EAAx", "code": "AQx", "state": state},
                  {"owner": "o", "access_token": "EAAx", "state": state}, {"owner": "o"}):
        try:
            models.LoginRequest.model_validate(mixed)
        except pydantic.ValidationError:
            continue
        raise AssertionError(f"the generated LoginRequest accepted {sorted(mixed)}")


def generated_shapes(client_dir):
    """The generated code's shapes the issue names: a typed login body, one class per enum."""
    models = {path.stem for path in (client_dir / "fbsessiond_client" / "models").glob("*.py")}
    duplicated = sorted(name for name in models if re.search(r"_type_\d", name))
    assert not duplicated, f"enum or object classes generated more than once: {duplicated}"
    for name in (
        "closed_reason", "action_required", "auth_type", "access_token_login", "code_login",
        "authentication_token_login",
    ):
        assert name in models, f"no model {name}: {sorted(models)}"
    source = (client_dir / "fbsessiond_client" / "api" / "sessions" / "create_session.py").read_text()
    assert "body: AccessTokenLogin | AuthenticationTokenLogin | CodeLogin" in source, "the login body is not typed"


class Flow:
    """Every answer of the flow goes through `check`, which validates it against the pydantic models."""

    def __init__(self, fbs, models):
        self.fbs = fbs
        self.models = models
        self.seen = 0
        self.validated = 0
        self.steps = []

    def hook(self, response):
        response.read()
        self.seen += 1

    def check(self, response, status, model, what):
        """Asserts the status, validates body and headers, and returns the generated client's parsed value."""
        assert response.status_code == status, f"{what}: {response.status_code} {response.content[:300]!r}"
        headers = {name.lower(): value for name, value in response.headers.items()}
        self.models.RequestID.model_validate(headers["x-request-id"])
        if "etag" in headers:
            self.models.EntityTag.model_validate(headers["etag"])
        if "retry-after" in headers:
            self.models.RetryAfterSeconds.model_validate(int(headers["retry-after"]))
        if response.status_code >= 400:
            self.models.Error.model_validate_json(response.content)
        elif model is not None:
            model.model_validate_json(response.content)
        self.validated += 1
        self.steps.append(f"{what}: {response.status_code}")
        return response.parsed


def run_flow(fbs, models, base_url, key):
    from fbsessiond_client import AuthenticatedClient
    from fbsessiond_client.api.apps import get_app
    from fbsessiond_client.api.audit import list_audit
    from fbsessiond_client.api.events import list_events
    from fbsessiond_client.api.login import create_login_nonce, create_login_url
    from fbsessiond_client.api.operations import get_open_api
    from fbsessiond_client.api.owners import list_owner_sessions, set_active_session
    from fbsessiond_client.api.sessions import (
        create_session, delete_session, get_session, get_session_picture, get_session_picture_description,
        get_session_token, refresh_authentication_token)
    from fbsessiond_client.models import (
        AccessTokenLogin, ActivateRequest, AuthenticationTokenLogin, AuthenticationTokenRefresh, AuthType,
        ClosedReason, CodeLogin, Error, ErrorCode, EventType, GetSessionValidate, GranularScope, LoginKind,
        LoginNonceRequest, LoginURL, LoginURLRequest, PictureDescription, PictureType, Profile, Revocation, Session,
        SessionList, SessionState, TokenInfo, Validation)
    from fbsessiond_client.types import UNSET, File

    flow = Flow(fbs, models)
    client = AuthenticatedClient(
        base_url=base_url, token=key, timeout=30.0, httpx_args={"event_hooks": {"response": [flow.hook]}})
    owner = "clients/owner@1"

    # Two emulator users; a token for the first (what the iOS SDK would hand the backend).
    ada = emulator("POST", "users", {"name": "Ada Client", "email": "ada@example.com"})["id"]
    bob = emulator("POST", "users", {"name": "Bob Client"})["id"]
    token = emulator("POST", "tokens", {"app_id": DEMO_APP_ID, "user_id": ada, "long_lived": True,
                                        "granted": ["public_profile", "email"]})["access_token"]

    # Login with an access token.
    first = flow.check(create_session.sync_detailed(client=client, body=AccessTokenLogin(owner=owner, access_token=token)),
                       201, models.Session, "login with an access token")
    assert isinstance(first, Session) and first.state == SessionState.OPEN and first.validation == Validation.FRESH
    assert first.closed_reason is None and first.action_required is None and first.slot == 0 and first.active
    assert isinstance(first.profile, Profile) and first.profile.name == "Ada Client"
    assert isinstance(first.token, TokenInfo) and "email" in first.token.permissions

    # A login URL, then the code flow through the dialog (as Bob, into slot 1, not activated).
    login_url = flow.check(create_login_url.sync_detailed(client=client, body=LoginURLRequest(
        owner=owner, redirect_uri=base_url + "/callback", scopes=["email"], auth_type=AuthType.REREQUEST, slot=1)),
        201, models.LoginURL, "a login URL")
    assert isinstance(login_url, LoginURL) and login_url.url.startswith(os.environ["FBS_EMULATOR_URL"])
    assert login_url.review_required == []
    landed = urllib.parse.parse_qs(urllib.parse.urlsplit(approve_in_dialog(login_url.url, bob)).query)
    assert landed["state"] == [login_url.state]
    second = flow.check(create_session.sync_detailed(client=client, body=CodeLogin(
        owner=owner, code=landed["code"][0], state=landed["state"][0], activate=False)),
        201, models.Session, "login through the code flow")
    assert second.slot == 1 and not second.active and second.profile.name == "Bob Client"
    # A login without a configuration: no permission is limited to assets.
    assert all(isinstance(entry, GranularScope) and entry.target_ids is UNSET
               for entry in second.token.granular_scopes)

    # Facebook Login for Business, for another owner: a login URL with the configuration (no scope), the dialog,
    # the code flow; the session's token names the assets granted, typed.
    business_owner = owner + "/business"
    emulator("POST", "business-configs", {
        "id": BUSINESS_CONFIG_ID, "app_id": DEMO_APP_ID, "permissions": ["pages_show_list", "business_management"],
        "assets": {"pages_show_list": BUSINESS_PAGES}})
    cid = emulator("POST", "users", {"name": "Cid Client"})["id"]
    business_url = flow.check(create_login_url.sync_detailed(client=client, body=LoginURLRequest(
        owner=business_owner, redirect_uri=base_url + "/callback", config_id=BUSINESS_CONFIG_ID)),
        201, models.LoginURL, "a Login for Business URL")
    asked = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(business_url.url).query))
    assert asked["config_id"] == BUSINESS_CONFIG_ID and asked["response_type"] == "code", sorted(asked)
    assert asked["override_default_response_type"] == "true" and "scope" not in asked, sorted(asked)
    assert business_url.review_required == []
    landed = urllib.parse.parse_qs(urllib.parse.urlsplit(approve_in_dialog(business_url.url, cid)).query)
    business = flow.check(create_session.sync_detailed(client=client, body=CodeLogin(
        owner=business_owner, code=landed["code"][0], state=landed["state"][0])),
        201, models.Session, "a Login for Business through the code flow")
    granted = [(entry.scope, None if entry.target_ids is UNSET else list(entry.target_ids))
               for entry in business.token.granular_scopes]
    assert all(isinstance(entry, GranularScope) for entry in business.token.granular_scopes)
    assert granted == [("public_profile", None), ("pages_show_list", BUSINESS_PAGES),
                       ("business_management", None)], granted
    listed_business = flow.check(list_owner_sessions.sync_detailed(business_owner, client=client), 200,
                                 models.SessionList, "the Login for Business owner's sessions")
    assert [entry.target_ids for entry in listed_business.sessions[0].token.granular_scopes][1] == BUSINESS_PAGES

    # A system user's token is not a person's: refused, typed.
    system_token = emulator("POST", "tokens", {
        "app_id": DEMO_APP_ID, "user_id": cid, "type": "system_user", "granted": ["business_management"]})["access_token"]
    refused = flow.check(create_session.sync_detailed(client=client, body=AccessTokenLogin(
        owner=business_owner + "/system", access_token=system_token)), 422, None, "a system user's token")
    assert isinstance(refused, Error) and refused.error.code == ErrorCode.UNSUPPORTED_TOKEN_TYPE
    assert refused.error.token_type == "SYSTEM_USER"

    # Status, the owner's list, switching the active account.
    status = flow.check(get_session.sync_detailed(first.id, client=client, validate=GetSessionValidate.ALWAYS),
                        200, models.Session, "status")
    assert status.state == SessionState.OPEN and status.validation == Validation.FRESH
    listed = flow.check(list_owner_sessions.sync_detailed(owner, client=client), 200, models.SessionList,
                        "the owner's sessions")
    assert isinstance(listed, SessionList) and [s.slot for s in listed.sessions] == [0, 1]
    assert listed.active_session_id == first.id
    switched = flow.check(set_active_session.sync_detailed(owner, client=client, body=ActivateRequest(
        session_id=second.id)), 200, models.SessionList, "switching the active account")
    assert switched.active_session_id == second.id
    assert [s.active for s in switched.sessions] == [False, True]

    # The picture as bytes and as JSON.
    picture = flow.check(get_session_picture.sync_detailed(first.id, client=client, type_=PictureType.LARGE),
                         200, None, "the picture's bytes")
    assert isinstance(picture, File) and picture.payload.read(8) == b"\x89PNG\r\n\x1a\n"
    described = flow.check(get_session_picture_description.sync_detailed(
        first.id, client=client, type_=PictureType.LARGE), 200, models.PictureDescription, "the picture's description")
    assert isinstance(described, PictureDescription) and described.width == 200 and described.is_silhouette is False

    # The events feed, read to its end: this owner's logins and switch are in it, typed.
    mine, cursor = [], UNSET
    while True:
        page = flow.check(list_events.sync_detailed(client=client, after=cursor, limit=500), 200, models.EventPage,
                          "the events feed")
        mine += [(event.type_, event.session_id) for event in page.events if event.owner == owner]
        if not page.events:
            break
        cursor = page.next_cursor
    assert (EventType.SESSION_OPENED, first.id) in mine and (EventType.SESSION_OPENED, second.id) in mine, mine
    assert (EventType.SESSION_ACTIVATED, second.id) in mine, mine
    revealed = flow.check(get_session_token.sync_detailed(first.id, client=client), 200, models.Token,
                          "the token reveal")
    assert revealed.session_id == first.id and re.fullmatch(r"[0-9a-f]{64}", revealed.appsecret_proof)
    assert revealed.access_token and revealed.access_token not in json.dumps(status.to_dict())

    # An error is typed too.
    missing = flow.check(get_session.sync_detailed("nope", client=client), 404, None, "an id that is no session")
    assert isinstance(missing, Error) and missing.error.code == ErrorCode.SESSION_NOT_FOUND

    # Logout with revoke: done, and done again; a session logged out without revoke can revoke nothing.
    out = flow.check(delete_session.sync_detailed(first.id, client=client, revoke=True), 200, models.Session,
                     "logout with revoke")
    assert out.state == SessionState.CLOSED and out.closed_reason == ClosedReason.LOGGED_OUT
    assert out.revocation == Revocation.DONE and out.token is None and out.profile is None
    again = flow.check(delete_session.sync_detailed(first.id, client=client, revoke=True), 200, models.Session,
                       "logout with revoke, again")
    assert again.revocation == Revocation.DONE
    plain = flow.check(delete_session.sync_detailed(second.id, client=client), 200, models.Session, "plain logout")
    assert plain.revocation is UNSET and plain.state == SessionState.CLOSED
    late = flow.check(delete_session.sync_detailed(second.id, client=client, revoke=True), 200, models.Session,
                      "revoke after a plain logout")
    assert late.revocation == Revocation.UNAVAILABLE

    # The audit log, read to its end: the token reveal (by this key, with its request id) and the revoking logout
    # are in it, typed; no entry holds the token.
    entries, cursor = [], UNSET
    while True:
        page = flow.check(list_audit.sync_detailed(client=client, after=cursor, limit=500), 200, models.AuditPage,
                          "the audit log")
        entries += page.entries
        if not page.entries:
            break
        cursor = page.next_cursor
    reads = [entry for entry in entries if entry.action == "token.read" and entry.target["id"] == first.id]
    assert reads and reads[-1].actor.kind == "key" and reads[-1].request_id, [entry.to_dict() for entry in reads]
    assert any(entry.action == "session.revoked" and entry.target["id"] == first.id for entry in entries)
    assert revealed.access_token not in json.dumps([entry.to_dict() for entry in entries])

    # The app and its Graph version: the logins above were answered with the version asked for (recorded by the
    # service on a task of its own, so it may take a moment to show).
    for _ in range(50):
        app = flow.check(get_app.sync_detailed(client=client), 200, models.App, "the app and its Graph version")
        if app.graph_version.served is not None:
            break
        time.sleep(0.1)
    assert app.graph_version.requested == "v25.0" and str(app.graph_version.available_until) == "2028-07-29"
    assert app.graph_version.served == "v25.0" and app.graph_version.served_at is not None
    assert app.warnings == [], app.warnings

    # Limited Login: a nonce for the SDK, the token the SDK returns (the emulator signs it), the login; then the
    # token the SDK refreshes by itself (iOS SDK 18.1) replaces the stored one, and its replay is refused.
    limited_owner = "clients/limited@1"
    nonce = flow.check(create_login_nonce.sync_detailed(client=client, body=LoginNonceRequest(owner=limited_owner)),
                       201, models.LoginNonce, "a Limited Login nonce")
    minted = emulator("POST", "limited/demo-token?user=bob&nonce=" + urllib.parse.quote(nonce.nonce, safe=""))
    limited = flow.check(create_session.sync_detailed(client=client, body=AuthenticationTokenLogin(
        owner=limited_owner, authentication_token=minted["authentication_token"])), 201, models.Session,
        "a Limited Login")
    assert limited.login_kind == LoginKind.LIMITED and limited.state == SessionState.OPEN
    refreshed = emulator("POST", "limited/refresh", {"id_token_hint": minted["authentication_token"]})
    renewed = flow.check(refresh_authentication_token.sync_detailed(limited.id, client=client,
                         body=AuthenticationTokenRefresh(authentication_token=refreshed["authentication_token"])),
                         200, models.Session, "a Limited Login refresh")
    assert renewed.id == limited.id and renewed.login_kind == LoginKind.LIMITED
    assert renewed.profile.id == limited.profile.id and renewed.token.expires_at >= limited.token.expires_at
    replay = flow.check(refresh_authentication_token.sync_detailed(limited.id, client=client,
                        body=AuthenticationTokenRefresh(authentication_token=refreshed["authentication_token"])),
                        422, None, "a replayed refresh")
    assert isinstance(replay, Error) and replay.error.code == ErrorCode.AUTHENTICATION_TOKEN_INVALID
    assert replay.error.reason == "not_newer"
    flow.check(delete_session.sync_detailed(limited.id, client=client), 200, models.Session, "a Limited logout")

    # The spec itself, typed as text.
    spec = flow.check(get_open_api.sync_detailed(client=client), 200, None, "the spec")
    assert isinstance(spec, str) and spec.startswith("openapi: 3.1.0")

    assert flow.seen == flow.validated, f"{flow.seen} answers, {flow.validated} validated"
    for step in flow.steps:
        print(f"ok  {step}")
    print(f"{flow.validated} answers, every one validated against the pydantic models")


def main():
    work = Path(sys.argv[1]).resolve()
    work.mkdir(parents=True, exist_ok=True)
    base_url = os.environ["FBS_URL"]
    with urllib.request.urlopen(base_url + "/openapi.yaml", timeout=10) as answer:
        served = answer.read()
    spec_path = work / "served-openapi.yaml"
    spec_path.write_bytes(served)
    servers = yaml.safe_load(served)["servers"]
    assert servers[0]["url"] == base_url, f"the served spec names {servers}, not {base_url}"
    print(f"served spec: servers[0].url = {servers[0]['url']}")
    fbs, models = generate(work, spec_path)
    generated_shapes(work / "client")
    login_models_exclusive(models)
    run_flow(fbs, models, servers[0]["url"], os.environ["FBS_API_KEY"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
