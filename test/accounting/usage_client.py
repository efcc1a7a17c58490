"""An accounting reader written with Python requests, as a VO's own scripts would: usage per site as CSV
(parsed with the csv module) and as JSON over TLS, the totals compared. Prints what it saw as JSON for
test/accounting/outside-clients.test.ts."""
import csv
import io
import json
import sys

import requests

url, ca, token, query = sys.argv[1:5]
headers = {"Authorization": f"Bearer {token}"}
as_csv = requests.get(f"{url}/accounting/jobs?{query}", headers={**headers, "Accept": "text/csv"}, verify=ca, timeout=30)
as_csv.raise_for_status()
rows = list(csv.DictReader(io.StringIO(as_csv.text, newline="")))
as_json = requests.get(f"{url}/accounting/jobs?{query}", headers=headers, verify=ca, timeout=30)
as_json.raise_for_status()
data = as_json.json()


def total(measure, table):
    return sum(float(r[measure]) for r in table)


same = len(rows) == len(data["rows"]) and all(
    c["Time"] == j["Time"] and c["Group"] == (j["Group"] or "") and int(c["Jobs"]) == j["Jobs"]
    and float(c["WallHours"]) == j["WallHours"] and float(c["CPUHours"]) == j["CPUHours"]
    and (c["CPUEfficiency"] == "" if j["CPUEfficiency"] is None else float(c["CPUEfficiency"]) == j["CPUEfficiency"])
    for c, j in zip(rows, data["rows"]))
print(json.dumps({
    "type": as_csv.headers["Content-Type"],
    "columns": list(rows[0].keys()) if rows else [],
    "groups": [r["Group"] for r in rows],
    "totals": {m: total(m, rows) for m in ("Jobs", "WallHours", "CoreHours", "CPUHours")},
    "jsonTotals": {m: total(m, data["rows"]) for m in ("Jobs", "WallHours", "CoreHours", "CPUHours")},
    "same": same,
}))
