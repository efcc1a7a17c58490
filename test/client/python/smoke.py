"""A user's program against the Python client generated from Dirigo's /openapi.json.

usage: smoke.py CLIENT_DIR BASE_URL CA_FILE TOKEN CATALOGUE_DIR
CLIENT_DIR holds the generated package `dirigo_client`. Submits a job, lists jobs, waits for it, downloads
its output sandbox (tar.gz), creates a catalogue directory with a file and searches it. Prints one JSON
object with what it saw; exits non-zero on failure (an exception).
"""
import base64
import json
import sys
import tarfile
import tempfile
import time

client_dir, base_url, ca_file, token, catalogue_dir = sys.argv[1:6]
sys.path.insert(0, client_dir)

import dirigo_client  # noqa: E402  (generated at test time into CLIENT_DIR)

config = dirigo_client.Configuration(host=base_url)
config.ssl_ca_cert = ca_file
config.access_token = token
config.temp_folder_path = tempfile.mkdtemp()
api = dirigo_client.ApiClient(config)
jobs = dirigo_client.JobsApi(api)
catalogue = dirigo_client.FileCatalogueApi(api)


def b64path(path):
    """Catalogue paths travel as URL-safe base 64 (RFC 4648 §5)."""
    return base64.urlsafe_b64encode(path.encode()).decode().rstrip("=")


# Submit: a JSON manifest whose job writes a file named in its output sandbox.
manifest = {
    "Executable": "/bin/sh",
    "Arguments": '-c "echo hello from python > greeting.txt"',
    "JobName": "python-client",
    "OutputSandbox": ["greeting.txt"],
}
jid = jobs.submit_job(manifest).jids[0]

# List: the new job is among the caller's.
listed = [j.job_id for j in jobs.list_jobs().jobs]

# Wait for the job to finish (the test service polls every 50 ms).
deadline = time.monotonic() + 30
while True:
    job = jobs.get_job(jid)
    if job.status in ("Done", "Failed", "Killed") or time.monotonic() > deadline:
        break
    time.sleep(0.1)

# Download: the generated client saves a binary answer to a file and returns its path.
sandbox_path = jobs.get_output_sandbox(jid)
with tarfile.open(sandbox_path, "r:gz") as tar:
    members = sorted(tar.getnames())
    greeting = tar.extractfile("greeting.txt").read().decode()

# Search: a directory with one registered file, then every directory below the parent.
catalogue.create_directory(b64path(catalogue_dir + "/run1"), {})
catalogue.register_file(b64path(catalogue_dir + "/run1/data.root"), {"Size": 42, "Checksum": "0a0b0c0d"})
found = catalogue.search_directories(b64path(catalogue_dir))

print(json.dumps({
    "jid": jid,
    "listed": jid in listed,
    "status": job.status,
    "sandbox": members,
    "greeting": greeting,
    "search": [{"Path": d.path, "Files": d.files, "Size": d.size} for d in found.directories],
}))
