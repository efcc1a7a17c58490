"""One comparison scenario through Debian's python3-requests and python3-authlib (the clients
@dirigo/idp-client replaces). Reads {"scenario", "ca"} as JSON on standard input and prints one outcome
per step as JSON. Run with /usr/bin/python3; compat.test.ts runs the package on the same scenario."""
import json
import sys
import time

import requests
from authlib.integrations.requests_client import OAuth2Session

TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'
ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token'


def stamp(url, headers, body):
    """The 'stamp' protected_request hook: shows what it saw and changes the body."""
    headers['X-Seen-Authorization'] = headers.get('Authorization', '')
    return url, headers, (body or '') + '&stamped=1'


def make_session(spec, ca):
    oauth = spec.get('oauth')
    if spec['kind'] == 'oauth2':
        token = oauth.get('token')
        if token and 'expires_in' in token:
            token = dict(token, expires_at=int(time.time()) + token['expires_in'])
        s = OAuth2Session(
            client_id=oauth.get('client_id'), client_secret=oauth.get('client_secret'),
            token_endpoint_auth_method=oauth.get('token_endpoint_auth_method'),
            scope=oauth.get('scope'), token=token, token_endpoint=oauth.get('token_endpoint'))
        if oauth.get('hook') == 'stamp':
            s.register_compliance_hook('protected_request', stamp)
    else:
        s = requests.Session()
    s.verify = ca
    s.trust_env = spec.get('trust_env', True)
    if spec.get('proxies'):
        s.proxies = spec['proxies']
    return s


def dirac_exchange(session, step):
    """A model of DIRAC's OAuth2IdProvider.exchangeToken: the configured scope plus the group's."""
    scopes = []
    for s in (session.scope or '').split() + step['group_scopes']:
        if s not in scopes:
            scopes.append(s)
    return session.fetch_token(step['url'], grant_type=TOKEN_EXCHANGE, subject_token=step['subject_token'],
                               subject_token_type=ACCESS_TOKEN_TYPE, scope=' '.join(scopes))


def token_outcome(token):
    return {'token': {k: token.get(k) for k in ('access_token', 'token_type', 'refresh_token', 'scope') if token.get(k) is not None}}


def run_step(session, step):
    op = step['op']
    if op == 'request':
        kwargs = {k: step[k] for k in ('params', 'data', 'json', 'headers') if k in step}
        if 'files' in step:
            kwargs['files'] = {name: tuple(part) for name, part in step['files'].items()}
        r = session.request(step['method'], step['url'], **kwargs)
        return {'status': r.status_code, 'body': r.text}
    if op == 'fetch_token':
        return token_outcome(session.fetch_token(step['url'], **step['params']))
    if op == 'refresh_token':
        return token_outcome(session.refresh_token(step['url']))
    if op == 'revoke_token':
        return {'status': session.revoke_token(step['url'], token=step['token'], token_type_hint=step['hint']).status_code}
    if op == 'exchange':
        return token_outcome(dirac_exchange(session, step))
    raise ValueError(op)


def main():
    job = json.load(sys.stdin)
    session = make_session(job['scenario']['session'], job['ca'])
    outcomes = []
    for step in job['scenario']['steps']:
        try:
            outcomes.append(run_step(session, step))
        except Exception as e:  # the outcome is the error's code, compared with the package's
            outcomes.append({'error': getattr(e, 'error', None) or type(e).__name__})
    json.dump(outcomes, sys.stdout)


main()
