"""Drives Dirigo's authorization server with Debian's python3-authlib (and python3-requests as the browser).

usage: e2e_authlib.py BASE_URL CA_FILE CLIENT_ID CLIENT_SECRET REDIRECT_URI USERNAME PASSWORD
Prints one JSON object with what happened; exits non-zero on failure.
"""
import json
import sys

import requests
from authlib.integrations.requests_client import OAuth2Session
from authlib.common.security import generate_token

from browser_login import sign_in_and_allow

base, ca, client_id, secret, redirect_uri, username, password = sys.argv[1:8]

meta = requests.get(base + "/.well-known/oauth-authorization-server", verify=ca, timeout=10).json()

session = OAuth2Session(
    client_id,
    secret,
    scope="compute.read compute.create",
    redirect_uri=redirect_uri,
    code_challenge_method="S256",
    token_endpoint_auth_method="client_secret_basic",
)
session.verify = ca
# Environment CA bundles (REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE) would override the session's verify.
session.trust_env = False
verifier = generate_token(64)
url, state = session.create_authorization_url(meta["authorization_endpoint"], code_verifier=verifier)


callback = sign_in_and_allow(base, ca, url, username, password)

token = session.fetch_token(meta["token_endpoint"], authorization_response=callback, code_verifier=verifier)
info = session.get(base + "/oauth2/userinfo", timeout=10).json()
refreshed = session.refresh_token(meta["token_endpoint"], refresh_token=token["refresh_token"])
info2 = session.get(base + "/oauth2/userinfo", timeout=10).json()

reuse = requests.post(
    meta["token_endpoint"],
    data={"grant_type": "refresh_token", "refresh_token": token["refresh_token"]},
    auth=(client_id, secret),
    verify=ca,
    timeout=10,
)

print(json.dumps({
    "state_returned": state in callback,
    "scope": token.get("scope"),
    "user": info.get("preferred_username"),
    "refreshed_differs": refreshed["refresh_token"] != token["refresh_token"],
    "user_after_refresh": info2.get("preferred_username"),
    "reuse_status": reuse.status_code,
    "reuse_error": reuse.json().get("error"),
}))
