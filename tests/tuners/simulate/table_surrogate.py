"""A surrogate for `packtune simulate --objective exec:CMD` that answers from a table, as
`--objective table:FILE` does: trial i trained to budget b gets the metric of the row of i with
the largest budget <= b. With SECONDS_PER_BUDGET it also answers a cost, that many simulated
seconds per budget trained. The tests compare its runs with the table's.

    python3 table_surrogate.py TABLE.csv [SECONDS_PER_BUDGET]
"""
import json
import sys

rows = {}
for line in open(sys.argv[1]):
    line = line.strip()
    if not line or line.startswith("#") or line == "trial,budget,metric":
        continue
    trial, budget, metric = line.split(",")
    rows.setdefault(int(trial), []).append((float(budget), float(metric)))
rate = float(sys.argv[2]) if len(sys.argv) > 2 else None

for line in sys.stdin:
    request = json.loads(line)
    reached = [row for row in rows[request["trial"]] if row[0] <= request["budget"]]
    answer = {"metric": max(reached)[1]}
    if rate is not None:
        answer["cost"] = rate * (request["budget"] - request["from"])
    print(json.dumps(answer), flush=True)
