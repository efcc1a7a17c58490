"""OpenID Connect with Debian's python3-authlib: code flow with PKCE and a nonce, then the ID token validated
by authlib's own CodeIDToken rules (iss, aud, exp, iat, nonce, at_hash, azp) with the keys of the JWKS.

usage: oidc_authlib.py BASE_URL CA_FILE CLIENT_ID CLIENT_SECRET REDIRECT_URI USERNAME PASSWORD
Prints one JSON object with the validated claims; exits non-zero on failure.
"""
import json
import sys

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from authlib.jose import JsonWebKey, jwt
from authlib.oidc.core import CodeIDToken

from browser_login import sign_in_and_allow

base, ca, client_id, secret, redirect_uri, username, password = sys.argv[1:8]

meta = requests.get(base + "/.well-known/openid-configuration", verify=ca, timeout=10).json()
session = OAuth2Session(
    client_id,
    secret,
    scope="openid profile email",
    redirect_uri=redirect_uri,
    code_challenge_method="S256",
    token_endpoint_auth_method="client_secret_basic",
)
session.verify = ca
session.trust_env = False
verifier = generate_token(64)
nonce = generate_token(20)
url, state = session.create_authorization_url(meta["authorization_endpoint"], code_verifier=verifier, nonce=nonce)


callback = sign_in_and_allow(base, ca, url, username, password)
token = session.fetch_token(meta["token_endpoint"], authorization_response=callback, code_verifier=verifier)

jwks = JsonWebKey.import_key_set(requests.get(meta["jwks_uri"], verify=ca, timeout=10).json())
claims = jwt.decode(
    token["id_token"],
    jwks,
    claims_cls=CodeIDToken,
    claims_options={"iss": {"essential": True, "value": meta["issuer"]}},
    claims_params={"nonce": nonce, "client_id": client_id, "access_token": token["access_token"]},
)
claims.validate()

# A token for another client, or another nonce, must fail the same validation.
failures = []
for params in ({"nonce": "other", "client_id": client_id}, {"nonce": nonce, "client_id": "someone-else"}):
    try:
        jwt.decode(token["id_token"], jwks, claims_cls=CodeIDToken, claims_params=params).validate()
    except Exception as err:  # authlib raises one class per failed claim
        failures.append(type(err).__name__)

print(json.dumps({"claims": dict(claims), "header": dict(claims.header), "failures": failures}))
