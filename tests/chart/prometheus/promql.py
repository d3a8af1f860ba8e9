#!/usr/bin/env python3
"""Asks a running Prometheus what a user of perfgate's metrics would ask it (HTTP API, v1).

  promql.py URL query EXPR                 the instant vector, one "labels value" line per series
  promql.py URL dashboard DASHBOARD.JSON   every panel query and template variable of a Grafana
                                           dashboard must parse and return data
  promql.py URL rules RULES.YAML ALERT...  every rule of the file is loaded, healthy, and its
                                           expression parses; the named alerts are firing
                                           (ALERT or ALERT:label=value; a suffix @pending asks
                                           only that it is active: its expression holds and
                                           its `for` has not run out yet)
  promql.py chart RENDERED.YAML RULES.YAML DASHBOARD.JSON
                                           the rendered chart's PrometheusRule and dashboard
                                           ConfigMap carry exactly the files; writes the rules
                                           as rendered to RENDERED.YAML.rules for promtool
Exits 1 with what failed.
"""
import json
import re
import sys
import urllib.parse
import urllib.request


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def api(url, path, **params):
    full = url.rstrip("/") + path + "?" + urllib.parse.urlencode(params)
    try:
        with urllib.request.urlopen(full, timeout=10) as r:
            body = json.load(r)
    except urllib.error.HTTPError as e:  # 400 for a query that does not parse: say why
        body = json.load(e)
    if body.get("status") != "success":
        raise ValueError("%s: %s: %s" % (path, body.get("errorType"), body.get("error")))
    return body["data"]


def instant(url, expr):
    data = api(url, "/api/v1/query", query=expr)
    if data["resultType"] == "scalar":
        return [({}, data["result"][1])]
    return [(s["metric"], s["value"][1]) for s in data["result"]]


def cmd_query(url, expr):
    try:
        for labels, value in instant(url, expr):
            text = ",".join('%s="%s"' % (k, v) for k, v in sorted(labels.items()))
            print("{%s} %s" % (text, value))
    except ValueError as e:
        fail("%s: %s" % (expr, e))


# Grafana's own macros and variables, as a dashboard at its widest setting would expand them.
MACROS = {"$__rate_interval": "1m", "$__interval": "15s", "$__range": "1h"}


def expand(expr, variables):
    for macro, value in MACROS.items():
        expr = expr.replace(macro, value)
    for name in variables:  # "All", whose allValue is .+
        expr = re.sub(r"\$\{%s(:[a-z]+)?\}|\$%s\b" % (name, name), ".+", expr)
    if "$" in expr:
        raise ValueError("an unknown variable is left in " + expr)
    return expr


def cmd_dashboard(url, path):
    with open(path) as f:
        dash = json.load(f)
    variables = [v["name"] for v in dash.get("templating", {}).get("list", [])]
    checks = []  # (where, expr)
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", q)
        if not m:
            fail("variable %s: only label_values(SELECTOR, LABEL) is checked, got %s" % (v["name"], q))
        checks.append(("variable " + v["name"], "count by (%s) (%s)" % (m.group(2), m.group(1))))

    def walk(panels):
        for p in panels:
            yield p
            yield from walk(p.get("panels", []))

    panels = 0
    for p in walk(dash.get("panels", [])):
        if p.get("type") == "row":
            continue
        panels += 1
        targets = p.get("targets", [])
        if not targets:
            fail("panel %r has no query" % p.get("title"))
        for t in targets:
            checks.append(("panel %r %s" % (p.get("title"), t.get("refId")), t["expr"]))
    failed = []
    for where, expr in checks:
        try:
            got = instant(url, expand(expr, variables))
        except ValueError as e:
            failed.append("%s: %s" % (where, e))
            continue
        if not got:
            failed.append("%s: no data for %s" % (where, expand(expr, variables)))
        else:
            print("ok %s: %d series" % (where, len(got)))
    if failed:
        fail("dashboard %s:\n  %s" % (path, "\n  ".join(failed)))
    print("dashboard: %d panels, %d queries, every one returns data" % (panels, len(checks)))


def cmd_rules(url, path, firing):
    import yaml
    with open(path) as f:
        groups = yaml.safe_load(f)["groups"]
    want = {r.get("alert") or r.get("record") for g in groups for r in g["rules"]}
    loaded = {}
    for g in api(url, "/api/v1/rules")["groups"]:
        for r in g["rules"]:
            loaded[r["name"]] = r
    failed = []
    for name in sorted(want):
        r = loaded.get(name)
        if r is None:
            failed.append("%s: not loaded" % name)
            continue
        if r.get("health") != "ok":
            failed.append("%s: health %s: %s" % (name, r.get("health"), r.get("lastError")))
        try:
            instant(url, r["query"])
        except ValueError as e:
            failed.append("%s: %s" % (name, e))
    active = {}
    pending = {}
    for a in api(url, "/api/v1/alerts")["alerts"]:
        into = active if a["state"] == "firing" else pending
        into.setdefault(a["labels"]["alertname"], []).append(a["labels"])
    for spec in firing:  # ALERT or ALERT:label=value, then @pending for pending or firing
        spec, _, state = spec.partition("@")
        name, _, sel = spec.partition(":")
        k, _, v = sel.partition("=")
        seen = active.get(name, []) + (pending.get(name, []) if state == "pending" else [])
        if not any(not k or labels.get(k) == v for labels in seen):
            failed.append("%s not %s (firing: %s; pending: %s)" %
                          (spec, state or "firing", json.dumps(active), json.dumps(pending)))
    if failed:
        fail("rules %s:\n  %s" % (path, "\n  ".join(failed)))
    print("rules: %d loaded and healthy; firing: %s; pending: %s" %
          (len(want), ", ".join(sorted(active)), ", ".join(sorted(pending))))


def cmd_chart(rendered, rules_path, dashboard_path):
    import yaml
    with open(rendered) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    with open(rules_path) as f:
        rules = yaml.safe_load(f)
    with open(dashboard_path) as f:
        dashboard = json.load(f)
    rule_objs = [d for d in docs if d.get("kind") == "PrometheusRule"]
    if len(rule_objs) != 1 or rule_objs[0]["spec"] != rules:
        fail("the rendered PrometheusRule is not files/prometheus-rules.yaml")
    with open(rendered + ".rules", "w") as f:
        yaml.safe_dump(rule_objs[0]["spec"], f)
    maps = [d for d in docs if d.get("kind") == "ConfigMap" and "perfgate.json" in d.get("data", {})]
    if len(maps) != 1 or json.loads(maps[0]["data"]["perfgate.json"]) != dashboard:
        fail("the rendered dashboard ConfigMap does not carry dashboards/perfgate.json")
    if maps[0]["metadata"].get("labels", {}).get("grafana_dashboard") != "1":
        fail("the dashboard ConfigMap lacks the sidecar's label grafana_dashboard: \"1\"")
    print("chart: PrometheusRule and dashboard ConfigMap carry the files")


def main(argv):
    if len(argv) >= 4 and argv[0] == "chart":
        return cmd_chart(*argv[1:4])
    if len(argv) < 3:
        fail(__doc__)
    url, cmd, rest = argv[0], argv[1], argv[2:]
    if cmd == "query":
        return cmd_query(url, rest[0])
    if cmd == "dashboard":
        return cmd_dashboard(url, rest[0])
    if cmd == "rules":
        return cmd_rules(url, rest[0], rest[1:])
    fail("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
