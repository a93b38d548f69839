#!/usr/bin/env python3
"""The /docs page in headless Chromium, driven like a person would.

Needs a live fbsessiond and a key with every scope:

    FBS_URL=http://127.0.0.1:8080 FBS_API_KEY=fbs_... python3 Tests/System/docs_page_test.py

Optional: FBS_EMULATOR_URL (the Graph emulator's base URL, as `fbsessiond run` prints it) adds a whole login,
picture and logout through the page; FBS_DOCS_SCREENSHOT=FILE.png saves what the page looked like at the end.

Uses Debian's `chromium` and `chromium-driver` at fixed paths (CHROMIUM, CHROMEDRIVER override them), so Selenium
Manager never runs and nothing is downloaded. Prints one PASS line per check, a closing
"docs_page: N passed, M failed" line, and exits non-zero on any failure.
"""

import hashlib
import json
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request

import yaml
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
KEY_STORAGE = "fbsessiond.docs.apiKey"
WAIT = 20


class Failure(Exception):
    pass


def mask(secret):
    """A secret as a short fingerprint of its SHA-256 and its length: enough to tell two apart, and no character
    of it is printed."""
    if not secret:
        return "(empty)"
    return "sha256:%s…(%d chars)" % (hashlib.sha256(secret.encode()).hexdigest()[:8], len(secret))


def http(method, url, key=None, body=None):
    request = urllib.request.Request(url, method=method, data=body)
    if key:
        request.add_header("Authorization", "Bearer " + key)
    try:
        with urllib.request.urlopen(request, timeout=15) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def check(condition, message):
    if not condition:
        raise Failure(message)


class Page:
    """The docs page in one browser, with helpers that act through its controls."""

    def __init__(self, base):
        self.base = base
        options = Options()
        options.binary_location = CHROMIUM
        self.profile = tempfile.TemporaryDirectory(prefix="fbs-docs-chromium-")
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--window-size=1280,1000", "--no-first-run", "--disable-extensions",
                         "--user-data-dir=" + self.profile.name):
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
        self.driver.set_page_load_timeout(WAIT)

    def close(self):
        try:
            self.driver.quit()
        finally:
            self.profile.cleanup()

    def load(self):
        self.driver.get(self.base + "/docs")
        main = self.driver.find_element(By.ID, "operations")
        WebDriverWait(self.driver, WAIT).until(lambda d: main.get_attribute("data-state") in ("ready", "error"))
        if main.get_attribute("data-state") != "ready":
            raise Failure("the page could not show the spec: " + self.driver.find_element(By.ID, "spec-status").text)

    def operation(self, operation_id):
        """Opens an operation (clicking its summary, as a person would) and returns its element."""
        element = self.driver.find_element(By.CSS_SELECTOR, '[data-operation-id="%s"]' % operation_id)
        if element.get_attribute("open") is None:
            summary = element.find_element(By.TAG_NAME, "summary")
            self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", summary)
            summary.click()
        WebDriverWait(self.driver, WAIT).until(
            lambda d: element.find_elements(By.CSS_SELECTOR, '[data-role="send"]'))
        return element

    def set_key(self, key):
        field = self.driver.find_element(By.ID, "api-key")
        field.clear()
        field.send_keys(key)

    def fill(self, operation, name, value):
        control = operation.find_element(By.CSS_SELECTOR, '[name="%s"]' % name)
        if control.tag_name == "select":
            Select(control).select_by_value(value)
        else:
            control.clear()
            control.send_keys(value)

    def set_body(self, operation, text):
        area = operation.find_element(By.CSS_SELECTOR, '[data-role="body-input"]')
        # A textarea holding JSON: replace its text the way a paste does, then tell the page it changed.
        self.driver.execute_script(
            "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input', {bubbles: true}))",
            area, text)

    def send(self, operation):
        """Clicks Send and waits for the response shown; returns (status, headers, body text, response element)."""
        box = operation.find_element(By.CSS_SELECTOR, '[data-role="response"]')
        self.driver.execute_script("arguments[0].removeAttribute('data-state')", box)
        button = operation.find_element(By.CSS_SELECTOR, '[data-role="send"]')
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
        button.click()
        try:
            WebDriverWait(self.driver, WAIT).until(lambda d: box.get_attribute("data-state") in ("done", "error"))
        except TimeoutException:
            raise Failure("no response shown within %d s" % WAIT)
        status_text = box.find_element(By.CSS_SELECTOR, '[data-role="status"]').text
        if box.get_attribute("data-state") != "done":
            raise Failure("the page showed an error instead of a response: " + status_text)
        headers = {dd.get_attribute("data-header"): dd.text
                   for dd in box.find_elements(By.CSS_SELECTOR, '[data-role="headers"] dd')}
        body = box.find_element(By.CSS_SELECTOR, '[data-role="body"]')
        return int(box.get_attribute("data-status")), status_text, headers, body

    def console_errors(self):
        return [entry["message"] for entry in self.driver.get_log("browser") if entry.get("level") == "SEVERE"]


def normalize(value):
    """PyYAML's result as JSON would carry it (the page's reader gives JSON values)."""
    return json.loads(json.dumps(value, default=str))


def main():
    base = os.environ.get("FBS_URL", "").rstrip("/")
    key = os.environ.get("FBS_API_KEY", "")
    emulator = os.environ.get("FBS_EMULATOR_URL", "").rstrip("/")
    if not base or not key:
        print("FAIL set FBS_URL (a live fbsessiond) and FBS_API_KEY (a key with every scope)")
        return 2
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            print("FAIL %s is missing: apt-get install -y chromium chromium-driver" % path)
            return 2

    passed = []
    failed = []

    def ok(message):
        passed.append(message)
        print("PASS " + message, flush=True)

    status, headers, spec_bytes = http("GET", base + "/openapi.yaml")
    if status != 200:
        print("FAIL GET /openapi.yaml answered %d" % status)
        return 1
    spec = yaml.safe_load(spec_bytes)
    methods = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
    expected = {op["operationId"] for item in spec["paths"].values() for method, op in item.items()
                if method in methods and "operationId" in op}
    status, _, app_bytes = http("GET", base + "/v1/app", key=key)
    if status != 200:
        print("FAIL GET /v1/app with FBS_API_KEY %s answered %d" % (mask(key), status))
        return 1
    app = json.loads(app_bytes)

    page = Page(base)
    try:
        steps = []

        def step(function):
            steps.append(function)
            return function

        @step
        def served_with_policy():
            status, headers, _ = http("GET", base + "/docs")
            lowered = {k.lower(): v for k, v in headers.items()}
            check(status == 200, "GET /docs answered %d" % status)
            check(lowered.get("content-type") == "text/html; charset=utf-8", "content type %r" % lowered.get("content-type"))
            policy = lowered.get("content-security-policy", "")
            check("default-src 'self'" in policy and "connect-src 'self'" in policy and "unsafe-inline" not in policy,
                  "content security policy %r" % policy)
            ok("GET /docs is text/html with a strict Content-Security-Policy and nosniff (%s)"
               % lowered.get("x-content-type-options"))

        @step
        def lists_every_operation():
            page.load()
            shown = [e.get_attribute("data-operation-id")
                     for e in page.driver.find_elements(By.CSS_SELECTOR, "[data-operation-id]")]
            check(len(shown) == len(set(shown)), "an operation is shown twice: %s" % sorted(shown))
            check(set(shown) == expected, "shown but not in the spec: %s; in the spec but not shown: %s"
                  % (sorted(set(shown) - expected), sorted(expected - set(shown))))
            ok("the page lists the %d operationIds of the served openapi.yaml, each once" % len(expected))

        @step
        def reads_yaml_like_pyyaml():
            parsed = json.loads(page.driver.execute_script("return JSON.stringify(window.fbsDocs.spec)"))
            check(parsed == normalize(spec), "the page's YAML reader and PyYAML read openapi.yaml differently")
            ok("the page's YAML reader reads openapi.yaml exactly as PyYAML does")

        @step
        def no_console_errors():
            errors = page.console_errors()
            check(not errors, "browser console errors (a CSP violation?): %s" % errors)
            ok("no browser console errors (no Content-Security-Policy violation)")

        @step
        def get_app_through_the_page():
            page.set_key(key)
            stored = page.driver.execute_script("return sessionStorage.getItem(arguments[0])", KEY_STORAGE)
            in_local = page.driver.execute_script("return localStorage.length")
            check(stored == key and in_local == 0, "the key is not in sessionStorage only")
            operation = page.operation("getApp")
            check("sessions" in operation.find_element(By.CSS_SELECTOR, '[data-role="scope"]').text,
                  "getApp does not show its scope")
            status, status_text, headers, body = page.send(operation)
            check(status == 200 and status_text.startswith("200"), "getApp showed %r" % status_text)
            shown = json.loads(body.text)
            check(shown.get("id") == app["id"] and shown.get("name") == app["name"],
                  "the body shown is not the key's app: %s" % body.text[:200])
            check(headers.get("x-request-id"), "no X-Request-Id shown: %s" % headers)
            ok("getApp sent through the page with key %s: 200, app %s (%s), X-Request-Id %s"
               % (mask(key), shown["name"], shown["id"], headers["x-request-id"]))

        @step
        def bad_key_shows_401():
            page.set_key("fbs_notakey_0000000000000000")
            operation = page.operation("getApp")
            status, status_text, headers, body = page.send(operation)
            error = json.loads(body.text).get("error", {})
            check(status == 401, "a bad key showed %r" % status_text)
            check(error.get("code") == "unauthorized" and error.get("message"), "error shape: %s" % body.text[:200])
            check(error.get("request_id") == headers.get("x-request-id"), "request_id differs from X-Request-Id")
            check(headers.get("www-authenticate") == "Bearer", "no WWW-Authenticate: Bearer shown")
            ok("a bad key through the page: 401 with {error: {code: unauthorized, message, request_id}} "
               "and WWW-Authenticate shown")
            page.set_key(key)

        @step
        def path_and_query_parameters():
            operation = page.operation("getSession")
            page.fill(operation, "id", "ses_docsPageTestNoSuchSession0")
            page.fill(operation, "validate", "never")
            status, status_text, headers, body = page.send(operation)
            code = json.loads(body.text).get("error", {}).get("code")
            check(status == 404 and code == "session_not_found", "getSession showed %r %s" % (status_text, code))
            ok("getSession with the id and validate inputs: 404 session_not_found shown")

        if emulator:
            @step
            def login_picture_logout():
                status, _, grant = http("POST", emulator + "/__emulator/demo-token?user=alice")
                check(status in (200, 201), "the emulator's demo-token answered %d" % status)
                token = json.loads(grant)["access_token"]
                operation = page.operation("createSession")
                page.set_body(operation, json.dumps({"owner": "docs-page-test", "access_token": token}))
                status, status_text, headers, body = page.send(operation)
                check(status in (200, 201), "createSession showed %r: %s" % (status_text, body.text[:300]))
                session = json.loads(body.text)
                check(token not in body.text, "the token came back in the body")
                ok("createSession through the page with a demo token %s: %s, session %s, %s"
                   % (mask(token), status_text, session["id"], session["profile"]["name"]))

                operation = page.operation("getSessionPicture")
                page.fill(operation, "id", session["id"])
                page.fill(operation, "type", "small")
                status, status_text, headers, body = page.send(operation)
                check(status == 200, "getSessionPicture showed %r" % status_text)
                image = body.find_element(By.CSS_SELECTOR, 'img[data-role="image"]')
                WebDriverWait(page.driver, WAIT).until(
                    lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image))
                width = page.driver.execute_script("return arguments[0].naturalWidth", image)
                check(width > 0 and headers.get("etag"), "no picture or ETag shown")
                ok("getSessionPicture shows the picture as an image (%d px wide, %s, ETag %s)"
                   % (width, headers.get("content-type"), headers["etag"]))

                operation = page.operation("deleteSession")
                page.fill(operation, "id", session["id"])
                status, status_text, headers, body = page.send(operation)
                closed = json.loads(body.text)
                check(status == 200 and closed.get("state") == "closed", "deleteSession showed %r" % status_text)
                ok("deleteSession through the page: 200, state closed (%s)" % closed.get("closed_reason"))

        if emulator:
            @step
            def limited_login_through_the_page():
                operation = page.operation("createLoginNonce")
                page.set_body(operation, json.dumps({"owner": "docs-page-limited"}))
                status, status_text, headers, body = page.send(operation)
                check(status == 201, "createLoginNonce showed %r: %s" % (status_text, body.text[:200]))
                nonce = json.loads(body.text)["nonce"]
                status, _, minted = http(
                    "POST", emulator + "/__emulator/limited/tokens",
                    body=json.dumps({"app_id": app["facebook_app_id"], "user_id": "10000000000000002", "nonce": nonce}).encode())
                check(status == 201, "the emulator's limited/tokens answered %d" % status)
                token = json.loads(minted)["authentication_token"]
                operation = page.operation("createSession")
                page.set_body(operation, json.dumps({"owner": "docs-page-limited", "authentication_token": token}))
                status, status_text, headers, body = page.send(operation)
                check(status == 201, "createSession (limited) showed %r: %s" % (status_text, body.text[:300]))
                session = json.loads(body.text)
                check(session.get("login_kind") == "limited" and token not in body.text,
                      "not a limited session, or the token came back: %s" % body.text[:200])
                operation = page.operation("getSessionToken")
                page.fill(operation, "id", session["id"])
                status, status_text, headers, body = page.send(operation)
                check(status == 409 and json.loads(body.text)["error"]["code"] == "no_graph_token",
                      "getSessionToken of a limited session showed %r" % status_text)
                ok("a Limited Login through the page: nonce, createSession with authentication_token %s: %s, "
                   "login_kind limited, getSessionToken 409 no_graph_token" % (mask(token), session["id"]))

        @step
        def key_survives_a_reload():
            screenshot = os.environ.get("FBS_DOCS_SCREENSHOT")
            if screenshot:  # the page as the steps above left it, operations open
                page.driver.save_screenshot(screenshot)
            page.load()
            value = page.driver.find_element(By.ID, "api-key").get_attribute("value")
            check(value == key, "the key field is not refilled from sessionStorage after a reload")
            ok("the key is refilled from sessionStorage after a reload")

        for function in steps:
            try:
                function()
            except Exception as error:  # noqa: BLE001 - each step's failure is reported, the rest still run
                message = "%s: %s" % (function.__name__, error)
                failed.append(message)
                print("FAIL " + message.replace(key, mask(key)), flush=True)
    finally:
        page.close()

    print("took %.1f s" % (time.monotonic() - STARTED))
    print("docs_page: %d passed, %d failed" % (len(passed), len(failed)))
    return 1 if failed else 0


STARTED = time.monotonic()

if __name__ == "__main__":
    sys.exit(main())
