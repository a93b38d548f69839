"""Part of the `clients` system check: the Graph emulator as Graph for real client libraries.

A backend that calls Graph itself (with the token from `GET /v1/sessions/{id}/token`) uses libraries like these
against the emulator in development; what they do must work as it does against Facebook:

- facebook-sdk: `get_object`, `get_objects` (`GET /?ids=a,b`), `get_permissions`, `get_app_access_token`, the
  app node with that app token (`GET /{app-id}`), `debug_access_token`, `extend_access_token`;
- requests-oauthlib with its Facebook compliance fix: the authorization URL, the dialog (approved as the user's
  browser would), the code exchange, and a Graph call with the session; and the dialog refusing a redirect URI
  the app did not register, as Facebook's strict mode does.

Needs FBS_EMULATOR_URL (the demo app's id and secret are the emulator's published demo values) and FBS_URL (the
service, whose `/callback` the stack registered as a redirect URI of the demo app). Prints no token.
"""

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

import facebook
from requests_oauthlib import OAuth2Session
from requests_oauthlib.compliance_fixes import facebook_compliance_fix

DEMO_APP_ID = "1000000000000001"
DEMO_APP_SECRET = "demo-app-secret-for-the-local-emulator"


def control(method, path, body=None):
    request = urllib.request.Request(
        os.environ["FBS_EMULATOR_URL"] + "/__emulator/" + path, method=method,
        data=None if body is None else json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def browser_approves(url, user_id):
    """Approves the dialog at `url` as `user_id`; returns (status, Location or page text)."""
    parts = urllib.parse.urlsplit(url)
    fields = dict(urllib.parse.parse_qsl(parts.query))
    form = {key: fields[key] for key in ("client_id", "redirect_uri", "state", "scope") if key in fields}
    form.update({"user_id": user_id, "action": "approve"})
    request = urllib.request.Request(
        urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")),
        data=urllib.parse.urlencode(form).encode(), method="POST")
    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as answer:
        return answer.code, answer.headers.get("Location") or answer.read().decode()


def facebook_sdk(base):
    facebook.FACEBOOK_GRAPH_URL = base + "/"
    facebook.FACEBOOK_WWW_URL = base + "/"
    ada = control("POST", "users", {"name": "Ada Library", "email": "ada.library@example.com"})["id"]
    bob = control("POST", "users", {"name": "Bob Library"})["id"]
    token = control("POST", "tokens", {"app_id": DEMO_APP_ID, "user_id": ada, "long_lived": True,
                                       "granted": ["public_profile", "email"]})["access_token"]
    control("POST", "tokens", {"app_id": DEMO_APP_ID, "user_id": bob})
    graph = facebook.GraphAPI(access_token=token, version="3.1")

    me = graph.get_object("me", fields="id,name,email")
    assert me == {"id": ada, "name": "Ada Library", "email": "ada.library@example.com"}, me
    both = graph.get_objects(["me", bob], fields="name")
    assert both == {"me": {"name": "Ada Library", "id": ada}, bob: {"name": "Bob Library", "id": bob}}, both
    assert graph.get_permissions(ada) == {"public_profile", "email"}

    app_token = graph.get_app_access_token(DEMO_APP_ID, DEMO_APP_SECRET)
    app = facebook.GraphAPI(access_token=app_token, version="3.1").get_object(DEMO_APP_ID)
    assert app == {"link": f"https://www.facebook.com/games/?app_id={DEMO_APP_ID}", "name": "fbsessions demo",
                   "id": DEMO_APP_ID}, app
    debug = graph.debug_access_token(token, DEMO_APP_ID, DEMO_APP_SECRET)["data"]
    assert debug["is_valid"] and debug["type"] == "USER" and debug["user_id"] == ada and debug["app_id"] == DEMO_APP_ID
    extended = graph.extend_access_token(DEMO_APP_ID, DEMO_APP_SECRET)
    assert extended["access_token"] != token and int(extended["expires_in"]) > 50 * 86400

    try:
        graph.get_objects(["me", "nobody.here"])
        raise AssertionError("an unknown alias was read")
    except facebook.GraphAPIError as error:
        assert error.code == 803, error.result
    print("ok  facebook-sdk: get_object, get_objects (?ids=), get_permissions, app token and app node, "
          "debug_access_token, extend_access_token, the 803 of an unknown alias")


def requests_oauthlib(base, callback):
    os.environ["OAUTHLIB_INSECURE_TRANSPORT"] = "1"  # the emulator is plain http on the loopback
    user = control("POST", "users", {"name": "Cid Oauth", "email": "cid@example.com"})["id"]
    session = facebook_compliance_fix(OAuth2Session(DEMO_APP_ID, redirect_uri=callback, scope=["email"]))
    url, state = session.authorization_url(base + "/dialog/oauth")
    status, location = browser_approves(url, user)
    assert status == 302 and location.startswith(callback + "?"), (status, location[:200])
    # Facebook wants client_id as a parameter of the exchange (it answers 101 "Missing client_id parameter."
    # to credentials in an Authorization header only), hence include_client_id.
    token = session.fetch_token(base + "/oauth/access_token", client_secret=DEMO_APP_SECRET,
                                authorization_response=location, include_client_id=True)
    assert token["token_type"].lower() == "bearer" and int(token["expires_in"]) > 0
    me = session.get(base + "/me", params={"fields": "id,name,email"}).json()
    assert me == {"id": user, "name": "Cid Oauth", "email": "cid@example.com"}, me

    # A redirect URI the demo app did not register: blocked, no code handed out.
    other = facebook_compliance_fix(OAuth2Session(DEMO_APP_ID, redirect_uri=callback + "/elsewhere", scope=["email"]))
    blocked_url, _ = other.authorization_url(base + "/dialog/oauth")
    try:
        urllib.request.urlopen(blocked_url, timeout=10)
        raise AssertionError("the dialog showed for an unregistered redirect URI")
    except urllib.error.HTTPError as answer:
        assert answer.code == 400 and "URL Blocked" in answer.read().decode()
    status, page = browser_approves(blocked_url, user)
    assert status == 400 and "URL Blocked" in page, (status, page[:200])
    print("ok  requests-oauthlib: authorization URL, dialog, code exchange, a Graph call; "
          "an unregistered redirect URI is blocked")


def main():
    base = os.environ["FBS_EMULATOR_URL"]
    facebook_sdk(base)
    requests_oauthlib(base, os.environ["FBS_URL"] + "/callback")
    return 0


if __name__ == "__main__":
    sys.exit(main())
