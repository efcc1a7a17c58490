"""A whole flow with the Python client (the wheel `dirigo-wms-client`, import package `dirigo_client`).

Gets a token from a user certificate (flow A: POST /oauth2/token with grant_type=client_credentials over
a TLS connection that presents the certificate), submits a job, waits for it and saves its output
sandbox. Prints one JSON object with what it did; exits non-zero when the job does not end Done.

    python3 dirigo_flow.py --url https://127.0.0.1:8443 --ca dirigo-data/pki/ca.crt \
        --cert dirigo-data/pki/users/alice.crt --key dirigo-data/pki/users/alice.key \
        --group dirigo_user --setup Dirigo-Local --out output
"""
from __future__ import annotations

import argparse
import json
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import dirigo_client  # the generated client ships no type information: its objects are Any here

FINAL_STATES = frozenset({"Done", "Failed", "Killed"})


@dataclass(frozen=True)
class Service:
    """Where the service is and how to reach it."""

    url: str
    ca: str


@dataclass(frozen=True)
class Outcome:
    """What the flow did, printed as JSON."""

    user: str
    group: str
    jid: int
    status: str
    sandbox: list[str]
    output: str


def configuration(service: Service, cert: Optional[str] = None, key: Optional[str] = None, token: Optional[str] = None) -> Any:
    """A client configuration trusting the service's CA, with a client certificate or a bearer token."""
    conf = dirigo_client.Configuration(host=service.url)
    conf.ssl_ca_cert = service.ca
    conf.temp_folder_path = tempfile.mkdtemp(prefix="dirigo-")
    if cert is not None:
        conf.cert_file, conf.key_file = cert, key or cert
    if token is not None:
        conf.access_token = token
    return conf


def token_from_certificate(service: Service, cert: str, key: str, group: Optional[str], setup: Optional[str]) -> str:
    """Flow A: the certificate authenticates at the TLS layer; the service answers with an access token."""
    oauth = dirigo_client.OAuth20Api(dirigo_client.ApiClient(configuration(service, cert=cert, key=key)))
    answer: dict[str, Any] = oauth.request_token("client_credentials", group=group, setup=setup)
    return str(answer["access_token"])


def submit(jobs: Any, manifest: dict[str, Any]) -> int:
    """Submits one manifest; its job id."""
    jids: list[int] = jobs.submit_job(manifest).jids
    return jids[0]


def wait(jobs: Any, jid: int, timeout: float = 60.0, every: float = 0.2) -> str:
    """Polls the job until it reaches a final state; its last status (not final after `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        status: str = jobs.get_job(jid).status
        if status in FINAL_STATES or time.monotonic() > deadline:
            return status
        time.sleep(every)


def fetch_output(jobs: Any, jid: int, out: Path) -> list[str]:
    """Downloads the output sandbox (tar.gz: the generated client saves it and returns the path) into `out`."""
    archive: str = jobs.get_output_sandbox(jid)
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:gz") as tar:
        names = sorted(tar.getnames())
        for name in names:
            member = tar.extractfile(name)  # None for anything but a regular file
            if member is not None:
                # Only the base name: nothing in the archive can write outside `out`.
                (out / Path(name).name).write_bytes(member.read())
    return names


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="https://127.0.0.1:8443")
    parser.add_argument("--ca", required=True, help="the service's CA certificate (PEM)")
    parser.add_argument("--cert", required=True, help="a user certificate, or a proxy file holding its key")
    parser.add_argument("--key", help="the certificate's key (default: in the --cert file)")
    parser.add_argument("--group")
    parser.add_argument("--setup")
    parser.add_argument("--out", default="output", help="where the output sandbox's files go")
    args = parser.parse_args(argv)

    service = Service(url=args.url.rstrip("/"), ca=args.ca)
    token = token_from_certificate(service, args.cert, args.key or args.cert, args.group, args.setup)
    api = dirigo_client.ApiClient(configuration(service, token=token))
    who: dict[str, Any] = dirigo_client.OAuth20Api(api).get_user_info()
    jobs = dirigo_client.JobsApi(api)
    jid = submit(jobs, {
        "Executable": "/bin/sh",
        "Arguments": '-c "echo hello from the Python example > greeting.txt"',
        "JobName": "python-example",
        "OutputSandbox": ["greeting.txt"],
    })
    status = wait(jobs, jid)
    names = fetch_output(jobs, jid, Path(args.out))
    greeting = (Path(args.out) / "greeting.txt").read_text() if "greeting.txt" in names else ""
    outcome = Outcome(user=str(who.get("preferred_username")), group=str(who.get("group")), jid=jid, status=status, sandbox=names, output=greeting)
    print(json.dumps(asdict(outcome)))
    return 0 if status == "Done" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
