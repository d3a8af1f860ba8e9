#!/usr/bin/env python3
"""Checks the chart's RBAC against the calls its service accounts really made.

usage: rbac_check.py AUDIT_LOG RBAC_JSON NAMESPACE USED_OUT SA... [--unused-ok 'SA VERB GROUP RESOURCE WHY']...

AUDIT_LOG: kube-sim's audit log (audit.k8s.io/v1 Events, one per line, with the authorization
decision and the authorizations admission plugins checked on the request's behalf).
RBAC_JSON: `kubectl get` of the cluster's roles, cluster roles and their bindings, as JSON lists.
For each service account SA of NAMESPACE: every call RBAC refused is MISSING (the chart grants
too little); every verb on a resource the chart grants and no call used is UNUSED (the chart
grants too much), unless listed with --unused-ok and a reason. Writes what each account used to
USED_OUT for a person to read. Exit status 0 when nothing is missing or unused.
"""
import collections
import json
import sys


def main(argv):
    unused_ok = {}
    args = []
    i = 1
    while i < len(argv):
        if argv[i] == "--unused-ok":
            sa, verb, group, resource, why = argv[i + 1].split(" ", 4)
            unused_ok[(sa, verb, group, resource)] = why
            i += 2
        else:
            args.append(argv[i])
            i += 1
    audit_path, rbac_path, ns, used_out = args[:4]
    accounts = args[4:]

    items = []
    with open(rbac_path) as f:
        decoder = json.JSONDecoder()
        text = f.read()
        pos = 0
        while pos < len(text):
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos >= len(text):
                break
            obj, pos = decoder.raw_decode(text, pos)
            items.extend(obj.get("items", []))
    roles = {}
    for it in items:
        kind = it["kind"]
        if kind in ("Role", "ClusterRole"):
            roles[(kind, it["metadata"].get("namespace", ""), it["metadata"]["name"])] = it.get("rules") or []

    # (sa) -> set of (verb, group, resource, scope); scope is a namespace or "*" (cluster-wide).
    granted = collections.defaultdict(set)
    for it in items:
        if it["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        scope = it["metadata"].get("namespace", "*") if it["kind"] == "RoleBinding" else "*"
        ref = it["roleRef"]
        role_ns = it["metadata"].get("namespace", "") if ref["kind"] == "Role" else ""
        rules = roles.get((ref["kind"], role_ns, ref["name"]), [])
        for s in it.get("subjects") or []:
            if s.get("kind") != "ServiceAccount" or s.get("namespace") != ns or s["name"] not in accounts:
                continue
            for rule in rules:
                for g in rule.get("apiGroups", []):
                    for r in rule.get("resources", []):
                        for v in rule.get("verbs", []):
                            granted[s["name"]].add((v, g, r, scope))

    used = collections.defaultdict(collections.Counter)  # sa -> (verb, group, resource, ns)
    missing = []
    with open(audit_path) as f:
        for line in f:
            e = json.loads(line)
            user = e.get("user", {}).get("username", "")
            prefix = "system:serviceaccount:%s:" % ns
            if not user.startswith(prefix) or user[len(prefix):] not in accounts:
                continue
            sa = user[len(prefix):]
            ref = e.get("objectRef")
            if ref is None:
                continue
            res = ref.get("resource", "") + ("/" + ref["subresource"] if ref.get("subresource") else "")
            call = (e["verb"], ref.get("apiGroup", ""), res, ref.get("namespace", ""))
            decision = e.get("annotations", {}).get("authorization.k8s.io/decision", "")
            if decision == "forbid":
                missing.append((sa, call, "refused by RBAC"))
                continue
            used[sa][call] += 1
            for c in e.get("admissionAuthorizations", []):
                cres = c["resource"] + ("/" + c["subresource"] if c.get("subresource") else "")
                ccall = (c["verb"], c["apiGroup"], cres, c.get("namespace", ""))
                if c["allowed"]:
                    used[sa][ccall] += 1
                else:
                    missing.append((sa, ccall, "refused to an admission plugin on %s %s" % (call[0], call[2])))

    def covers(grant, call):
        v, g, r, scope = grant
        cv, cg, cr, cns = call
        return v == cv and g == cg and r == cr and (scope == "*" or scope == cns)

    unused = []
    with open(used_out, "w") as out:
        out.write("# calls each service account made, as the API server's audit log saw them\n")
        out.write("# account  verb  group  resource[/subresource]  namespace  count\n")
        for sa in accounts:
            for call, n in sorted(used[sa].items()):
                out.write("%s  %s  %s  %s  %s  %d\n" % (sa, call[0], call[1] or '""', call[2], call[3] or "(cluster)", n))
        for sa in accounts:
            for grant in sorted(granted[sa]):
                if any(covers(grant, c) for c in used[sa]):
                    continue
                why = unused_ok.get((sa, grant[0], grant[1] or '""', grant[2]))
                if why is not None:
                    out.write("# %s: %s %s %s granted, not called here: %s\n" % (sa, grant[0], grant[1] or '""', grant[2], why))
                    continue
                unused.append((sa, grant))
    for sa, call, why in missing:
        print("MISSING: %s: %s %s %s in %s: %s" % (sa, call[0], call[1] or '""', call[2], call[3] or "(cluster)", why))
    for sa, (v, g, r, scope) in unused:
        print("UNUSED: %s: %s %s %s (%s) granted by the chart, called on no path" % (sa, v, g or '""', r, "cluster-wide" if scope == "*" else "in " + scope))
    for sa in accounts:
        if not granted[sa]:
            print("NO GRANTS: %s: no role bound to it" % sa)
    return 1 if missing or unused or any(not granted[sa] for sa in accounts) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
