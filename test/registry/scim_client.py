"""A SCIM client written with Python requests, as another VO service would: a client_credentials token
with scope scim:read, then a filtered read of /scim/v2/Users page by page (RFC 7644 §3.4.2.4) over TLS.
Prints what it saw as JSON for test/registry/scim-clients.test.ts."""
import json
import sys

import requests

url, ca, client_id, secret, flt = sys.argv[1:6]
token = requests.post(f"{url}/oauth2/token", data={"grant_type": "client_credentials", "scope": "scim:read"},
                      auth=(client_id, secret), verify=ca, timeout=30).json()["access_token"]
headers = {"Authorization": f"Bearer {token}", "Accept": "application/scim+json"}
names, pages, start, total, types = [], 0, 1, None, set()
while total is None or start <= total:
    r = requests.get(f"{url}/scim/v2/Users", params={"filter": flt, "startIndex": start, "count": 2, "sortBy": "userName"},
                     headers=headers, verify=ca, timeout=30)
    r.raise_for_status()
    types.add(r.headers["Content-Type"].split(";")[0])
    page = r.json()
    total = page["totalResults"]
    names += [u["userName"] for u in page["Resources"]]
    pages += 1
    start += page["itemsPerPage"]
    if page["itemsPerPage"] == 0:
        break
bad = requests.get(f"{url}/scim/v2/Users", params={"filter": "userName zz \"x\""}, headers=headers, verify=ca, timeout=30)
print(json.dumps({"names": names, "pages": pages, "total": total, "types": sorted(types),
                  "bad": {"status": bad.status_code, "body": bad.json()}}))
