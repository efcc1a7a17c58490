"""The browser's part of the code flow, with python3-requests: sign in with a password, allow the request.

Shared by the authlib scripts of the test suite.
"""
import re

import requests


def hidden_fields(html, action):
    start = html.index('action="%s"' % action)
    form = html[start:html.index("</form>", start)]
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form))


def sign_in_and_allow(base, ca, url, username, password):
    """Follows `url` to the login page, signs in, allows dirigo_user; returns the callback URL."""
    browser = requests.Session()
    browser.verify = ca
    browser.trust_env = False
    page = browser.get(url, timeout=10)
    assert 'action="/oauth2/login"' in page.text, page.text
    page = browser.post(base + "/oauth2/login", data=dict(hidden_fields(page.text, "/oauth2/login"), username=username, password=password), timeout=10)
    assert 'action="/oauth2/consent"' in page.text, page.text
    answer = browser.post(
        base + "/oauth2/consent",
        data=dict(hidden_fields(page.text, "/oauth2/consent"), group="dirigo_user", setup="Dirigo-Test", decision="allow"),
        allow_redirects=False,
        timeout=10,
    )
    assert answer.status_code == 303, answer.status_code
    return answer.headers["Location"]
