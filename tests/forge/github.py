#!/usr/bin/env python3
"""A local stand-in of the GitHub API, over HTTPS on 127.0.0.1, for owt's
forge tests: the real `gh` CLI talks to it as to a GitHub Enterprise host.

A public forge cannot exist in a test (no network, no account), so this
serves the few endpoints owt's commands make `gh` call, with responses
shaped like GitHub's documented ones (REST v3 and GraphQL). Nothing else.

    python3 tests/forge/github.py --certs DIR --log LOG.jsonl [--bare REPO.git] [--token T]

Prints `PORT <n>` once it serves. `DIR` gets `ca.pem` (the CA to trust:
`SSL_CERT_FILE`) and the server's certificate, made with `openssl` on the
first run. `--bare`: the repository pushes go to; a pull request's head
commit is read from it, as GitHub reads it from the pushed branch.

Control (the test's side), one JSON object per line on stdin; each is
answered with one line on stdout (`ok` or `error: …`):
  {"op": "ci", "pr": 1, "checks": [{"name": "test", "conclusion": "failure"|"success"|null, "log": "…"}]}
                                           (runs on the branch's head commit as pushed now)
  {"op": "comment", "pr": 1, "author": "alice", "body": "…"}                   (conversation)
  {"op": "review_comment", "pr": 1, "author": "alice", "path": "a.txt", "line": 1, "body": "…"}
  {"op": "review", "pr": 1, "author": "alice", "state": "CHANGES_REQUESTED"|"APPROVED"|"COMMENTED", "body": "…"}
  Comments and reviews take "association" (GitHub's author association: OWNER,
  MEMBER, COLLABORATOR, CONTRIBUTOR, NONE, …; default MEMBER).
  {"op": "mergeable", "pr": 1, "value": "MERGEABLE"|"CONFLICTING"|"UNKNOWN"}
  {"op": "merge", "pr": 1}   {"op": "close", "pr": 1}
  {"op": "rate_limit", "seconds": 30}      (every call but GET /rate_limit answers 403 until then)
  {"op": "state"}                          (answers `ok <json of every pull request>`)

Every request is logged (JSONL: method, path, GraphQL operation name,
status) — what the tests count calls with.

Standard library and the `openssl` and `git` programs only.
"""

import argparse
import io
import json
import os
import re
import subprocess
import sys
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {
    "prs": {},          # number -> pull request
    "next_id": 1,
    "rate_limited_until": 0,
    "runs": {},         # run id -> {"pr", "name", "conclusion", "log", "job"}
}
ARGS = None


def now_iso():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def next_id():
    STATE["next_id"] += 1
    return STATE["next_id"]


# ------------------------------------------------------------- certificates


def make_certs(folder):
    os.makedirs(folder, exist_ok=True)
    ca, key = os.path.join(folder, "ca.pem"), os.path.join(folder, "ca.key")
    crt, ckey = os.path.join(folder, "server.pem"), os.path.join(folder, "server.key")
    if os.path.exists(crt) and os.path.exists(ckey):
        return crt, ckey

    def run(*argv):
        subprocess.run(argv, check=True, capture_output=True)

    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
        "-out", ca, "-days", "2", "-subj", "/CN=owt test forge CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign")
    csr = os.path.join(folder, "server.csr")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", ckey, "-out", csr,
        "-subj", "/CN=127.0.0.1")
    ext = os.path.join(folder, "server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                "extendedKeyUsage=serverAuth\n")
    run("openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", key, "-CAcreateserial",
        "-out", crt, "-days", "2", "-extfile", ext)
    return crt, ckey


# ------------------------------------------------------------ pull requests


def head_oid(branch):
    if not ARGS.bare:
        return "0" * 40
    out = subprocess.run(["git", "--git-dir", ARGS.bare, "rev-parse", "-q", "--verify",
                          f"refs/heads/{branch}"], capture_output=True, text=True)
    return out.stdout.strip() or "0" * 40


def user(login):
    """A user as REST v3 shows one."""
    return {"login": login, "id": sum(map(ord, login)), "type": "User"}


def gql_user(login):
    """A user as GraphQL shows one."""
    return {"login": login, "id": f"U_{sum(map(ord, login))}", "name": login,
            "__typename": "User"}


def rollup(pr):
    """The head commit's checks (runs of an older head are not GitHub's
    rollup of this one)."""
    nodes = []
    head = head_oid(pr["head"])
    for c in pr["checks"]:
        if c["sha"] != head:
            continue
        done = c.get("conclusion") is not None
        nodes.append({
            "__typename": "CheckRun",
            "name": c["name"],
            "status": "COMPLETED" if done else "IN_PROGRESS",
            "conclusion": (c["conclusion"] or "").upper(),
            "startedAt": now_iso(),
            "completedAt": now_iso() if done else "0001-01-01T00:00:00Z",
            "detailsUrl": f"{ARGS.base}/{ARGS.owner}/{ARGS.repo}/actions/runs/{c['run']}/job/{c['job']}",
        })
    return nodes


def pr_graphql(pr):
    host = ARGS.base
    return {
        "id": f"PR_{pr['number']}",
        "number": pr["number"],
        "title": pr["title"],
        "body": pr["body"],
        "url": f"{host}/{ARGS.owner}/{ARGS.repo}/pull/{pr['number']}",
        "state": pr["state"],
        "isDraft": pr["draft"],
        "closed": pr["state"] != "OPEN",
        "merged": pr["state"] == "MERGED",
        "mergeable": pr["mergeable"],
        "reviewDecision": pr["review_decision"],
        "headRefName": pr["head"],
        "baseRefName": pr["base"],
        "headRefOid": head_oid(pr["head"]),
        "author": gql_user("owt-user"),
        "comments": {"nodes": [
            {"id": c["node_id"], "author": gql_user(c["author"]), "authorAssociation": c["association"],
             "body": c["body"], "createdAt": c["at"], "includesCreatedEdit": False,
             "isMinimized": False, "minimizedReason": "", "reactionGroups": [],
             "url": f"{host}/{ARGS.owner}/{ARGS.repo}/pull/{pr['number']}#issuecomment-{c['id']}",
             "viewerDidAuthor": False}
            for c in pr["comments"]], "totalCount": len(pr["comments"]),
            "pageInfo": {"hasNextPage": False, "endCursor": ""}},
        "reviews": {"nodes": [
            {"id": r["node_id"], "author": gql_user(r["author"]), "authorAssociation": r["association"],
             "body": r["body"], "submittedAt": r["at"], "includesCreatedEdit": False,
             "reactionGroups": [], "state": r["state"],
             "url": f"{host}/{ARGS.owner}/{ARGS.repo}/pull/{pr['number']}#pullrequestreview-{r['id']}",
             "commit": {"oid": head_oid(pr["head"])}}
            for r in pr["reviews"]], "totalCount": len(pr["reviews"]),
            "pageInfo": {"hasNextPage": False, "endCursor": ""}},
        "statusCheckRollup": {"nodes": [{"commit": {"oid": head_oid(pr["head"]),
            "statusCheckRollup": {"contexts": {"nodes": rollup(pr),
                "pageInfo": {"hasNextPage": False, "endCursor": ""}}}}}]},
    }


def repo_graphql():
    return {
        "id": "R_1", "name": ARGS.repo, "owner": {"login": ARGS.owner, "id": "U_1"},
        "hasIssuesEnabled": True, "description": "", "hasWikiEnabled": False,
        "viewerPermission": "ADMIN", "defaultBranchRef": {"name": "main"},
        "parent": None, "mergeCommitAllowed": True, "rebaseMergeAllowed": True,
        "squashMergeAllowed": True, "isPrivate": False, "url": f"{ARGS.base}/{ARGS.owner}/{ARGS.repo}",
    }


def create_pr(variables):
    inp = variables.get("input", variables)
    head = inp.get("headRefName", "")
    with LOCK:
        for pr in STATE["prs"].values():
            if pr["head"] == head and pr["state"] == "OPEN":
                return None, (f"A pull request already exists for {ARGS.owner}:{head}.")
        number = len(STATE["prs"]) + 1
        pr = {"number": number, "head": head, "base": inp.get("baseRefName", "main"),
              "title": inp.get("title", ""), "body": inp.get("body", ""),
              "draft": bool(inp.get("draft")), "state": "OPEN", "mergeable": "MERGEABLE",
              "review_decision": "", "checks": [], "comments": [], "reviews": [],
              "review_comments": []}
        STATE["prs"][number] = pr
        return pr, None


# --------------------------------------------------------------- the server


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, doc=None, raw=None, ctype="application/json; charset=utf-8",
              headers=None):
        body = raw if raw is not None else json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.status = status

    def record(self, op=None):
        with LOCK:
            with open(ARGS.log, "a") as f:
                f.write(json.dumps({"method": self.command, "path": self.path, "op": op,
                                    "status": getattr(self, "status", None),
                                    "at": time.time()}) + "\n")

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}") if n else {}

    def gate(self, path):
        """Authentication and rate limiting, as GitHub answers them."""
        if self.headers.get("Authorization") != f"token {ARGS.token}":
            self.reply(401, {"message": "Bad credentials",
                             "documentation_url": "https://docs.github.com/rest"})
            return False
        until = STATE["rate_limited_until"]
        if until > time.time() and not path.endswith("/rate_limit"):
            self.reply(403, {"message": "API rate limit exceeded for user ID 1.",
                             "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"},
                       headers={"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0",
                                "X-RateLimit-Reset": str(int(until)),
                                "X-RateLimit-Resource": "core"})
            return False
        return True

    def do_GET(self):
        path = self.path.split("?")[0]
        if not self.gate(path):
            return self.record()
        m = re.fullmatch(r"/api/v3/repos/[^/]+/[^/]+/pulls/(\d+)/comments", path)
        if m:
            pr = STATE["prs"].get(int(m.group(1)))
            if not pr:
                self.reply(404, {"message": "Not Found"})
            else:
                self.reply(200, [
                    {"id": c["id"], "node_id": c["node_id"], "path": c["path"], "line": c["line"],
                     "original_line": c["line"], "side": "RIGHT", "body": c["body"],
                     "user": user(c["author"]), "author_association": c["association"],
                     "created_at": c["at"], "updated_at": c["at"],
                     "html_url": f"{ARGS.base}/{ARGS.owner}/{ARGS.repo}/pull/{pr['number']}#discussion_r{c['id']}",
                     "commit_id": head_oid(pr["head"]), "pull_request_review_id": None}
                    for c in pr["review_comments"]])
            return self.record()
        m = re.fullmatch(r"/api/v3/rate_limit", path)
        if m:
            limited = STATE["rate_limited_until"] > time.time()
            reset = int(STATE["rate_limited_until"] if limited else time.time() + 3600)
            remaining = 0 if limited else 4999
            res = {"limit": 5000, "remaining": remaining, "reset": reset, "used": 5000 - remaining}
            self.reply(200, {"resources": {"core": res, "graphql": res}, "rate": res})
            return self.record()
        m = re.fullmatch(r"/api/v3/repos/[^/]+/[^/]+/actions/runs/(\d+)", path)
        if m:
            run = STATE["runs"].get(int(m.group(1)))
            if not run:
                self.reply(404, {"message": "Not Found"})
            else:
                self.reply(200, self.run_doc(int(m.group(1)), run))
            return self.record()
        if re.fullmatch(r"/api/v3/repos/[^/]+/[^/]+/actions/workflows/1", path):
            self.reply(200, {"id": 1, "node_id": "W_1", "name": "CI", "path": ".github/workflows/ci.yml",
                             "state": "active", "created_at": now_iso(), "updated_at": now_iso()})
            return self.record()
        m = re.fullmatch(r"/api/v3/repos/[^/]+/[^/]+/actions/runs/(\d+)/jobs", path)
        if m:
            rid = int(m.group(1))
            run = STATE["runs"].get(rid)
            jobs = [self.job_doc(rid, run)] if run else []
            self.reply(200, {"total_count": len(jobs), "jobs": jobs})
            return self.record()
        m = re.fullmatch(r"/api/v3/repos/[^/]+/[^/]+/actions/runs/(\d+)/logs", path)
        if m:
            run = STATE["runs"].get(int(m.group(1)))
            if not run:
                self.reply(404, {"message": "Not Found"})
                return self.record()
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w") as z:
                z.writestr(f"{run['name']}/1_Set up job.txt", f"{now_iso()} set up\n")
                lines = "".join(f"{now_iso()} {l}\n" for l in run["log"].splitlines())
                z.writestr(f"{run['name']}/2_Run tests.txt", lines)
            self.reply(200, raw=buf.getvalue(), ctype="application/zip")
            return self.record()
        self.reply(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
        self.record()

    def run_doc(self, rid, run):
        return {"id": rid, "name": "CI", "head_branch": run["head"], "head_sha": run["sha"],
                "status": "completed", "conclusion": run["conclusion"], "event": "pull_request",
                "workflow_id": 1, "run_attempt": 1, "created_at": now_iso(), "updated_at": now_iso(),
                "url": f"{ARGS.base}/api/v3/repos/{ARGS.owner}/{ARGS.repo}/actions/runs/{rid}",
                "html_url": f"{ARGS.base}/{ARGS.owner}/{ARGS.repo}/actions/runs/{rid}",
                "jobs_url": f"{ARGS.base}/api/v3/repos/{ARGS.owner}/{ARGS.repo}/actions/runs/{rid}/jobs",
                "logs_url": f"{ARGS.base}/api/v3/repos/{ARGS.owner}/{ARGS.repo}/actions/runs/{rid}/logs",
                "path": ".github/workflows/ci.yml"}

    def job_doc(self, rid, run):
        return {"id": run["job"], "run_id": rid, "name": run["name"], "status": "completed",
                "conclusion": run["conclusion"], "started_at": now_iso(), "completed_at": now_iso(),
                "html_url": f"{ARGS.base}/{ARGS.owner}/{ARGS.repo}/actions/runs/{rid}/job/{run['job']}",
                "steps": [
                    {"name": "Set up job", "status": "completed", "conclusion": "success", "number": 1,
                     "started_at": now_iso(), "completed_at": now_iso()},
                    {"name": "Run tests", "status": "completed", "conclusion": run["conclusion"],
                     "number": 2, "started_at": now_iso(), "completed_at": now_iso()}]}

    def do_POST(self):
        path = self.path.split("?")[0]
        if not self.gate(path):
            self.body()
            return self.record()
        if path != "/api/graphql":
            self.reply(404, {"message": "Not Found"})
            return self.record()
        doc = self.body()
        query = doc.get("query", "")
        m = re.search(r"\b(query|mutation)\s+(\w+)", query)
        op = m.group(2) if m else None
        variables = doc.get("variables") or {}
        self.graphql(op, query, variables)
        self.record(op)

    def graphql(self, op, query, variables):
        if op == "RepositoryInfo" or op == "RepositoryFind" or op == "RepositoryNetwork":
            return self.reply(200, {"data": {"repository": repo_graphql()}})
        if op == "UserCurrent":
            return self.reply(200, {"data": {"viewer": {"login": "owt-user"}}})
        if op == "PullRequestByNumber":
            pr = STATE["prs"].get(int(variables.get("pr_number", 0)))
            if not pr:
                return self.reply(200, {"data": {"repository": {"pullRequest": None}},
                    "errors": [{"type": "NOT_FOUND", "path": ["repository", "pullRequest"],
                                "message": f"Could not resolve to a PullRequest with the number of {variables.get('pr_number')}."}]})
            return self.reply(200, {"data": {"repository": {"pullRequest": pr_graphql(pr)}}})
        if op == "PullRequestForBranch":
            head = variables.get("headRefName")
            nodes = [pr_graphql(p) for p in STATE["prs"].values() if p["head"] == head]
            return self.reply(200, {"data": {"repository": {"pullRequests": {"nodes": nodes}}}})
        if op == "PullRequestCreate":
            pr, err = create_pr(variables)
            if err:
                return self.reply(200, {"data": {"createPullRequest": None},
                                        "errors": [{"type": "UNPROCESSABLE", "message": err}]})
            return self.reply(200, {"data": {"createPullRequest": {"pullRequest": pr_graphql(pr)}}})
        return self.reply(200, {"errors": [{"message": f"the owt test stand-in does not serve {op}"}]})


def control():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            cmd = json.loads(line)
            answer = apply(cmd)
            print(answer if answer else "ok", flush=True)
        except Exception as e:  # a bad command is the test's bug: say so
            print(f"error: {e}", flush=True)


def apply(cmd):
    op = cmd["op"]
    with LOCK:
        if op == "rate_limit":
            STATE["rate_limited_until"] = time.time() + float(cmd["seconds"])
            return None
        if op == "state":
            return "ok " + json.dumps(STATE["prs"])
        pr = STATE["prs"][int(cmd["pr"])]
        at = now_iso()
        # GitHub's author association of a comment's author (OWNER, MEMBER,
        # COLLABORATOR, CONTRIBUTOR, FIRST_TIME_CONTRIBUTOR, NONE, …).
        association = cmd.get("association", "MEMBER")
        if op == "ci":
            pr["checks"] = []
            for c in cmd["checks"]:
                rid, job = next_id(), next_id()
                check = {"name": c["name"], "conclusion": c.get("conclusion"), "run": rid, "job": job,
                         "sha": head_oid(pr["head"])}
                pr["checks"].append(check)
                STATE["runs"][rid] = {"name": c["name"], "conclusion": c.get("conclusion"),
                                      "log": c.get("log", ""), "job": job, "head": pr["head"],
                                      "sha": head_oid(pr["head"])}
        elif op == "comment":
            i = next_id()
            pr["comments"].append({"id": i, "node_id": f"IC_{i}", "author": cmd["author"],
                                   "association": association, "body": cmd["body"], "at": at})
        elif op == "review_comment":
            i = next_id()
            pr["review_comments"].append({"id": i, "node_id": f"PRRC_{i}", "author": cmd["author"],
                                          "association": association, "path": cmd["path"], "line": cmd["line"],
                                          "body": cmd["body"], "at": at})
        elif op == "review":
            i = next_id()
            pr["reviews"].append({"id": i, "node_id": f"PRR_{i}", "author": cmd["author"],
                                  "association": association, "state": cmd["state"], "body": cmd.get("body", ""), "at": at})
            if cmd["state"] in ("APPROVED", "CHANGES_REQUESTED"):
                pr["review_decision"] = cmd["state"]
        elif op == "mergeable":
            pr["mergeable"] = cmd["value"]
        elif op == "merge":
            pr["state"] = "MERGED"
        elif op == "close":
            pr["state"] = "CLOSED"
        else:
            raise ValueError(f"unknown op {op}")
    return None


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--certs", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--bare")
    ap.add_argument("--token", default="owt-test-token")
    ap.add_argument("--owner", default="owt-test")
    ap.add_argument("--repo", default="app")
    ap.add_argument("--port", type=int, default=0)
    ARGS = ap.parse_args()
    crt, key = make_certs(ARGS.certs)
    import ssl
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(crt, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    ARGS.base = f"https://127.0.0.1:{port}"
    print(f"PORT {port}", flush=True)
    threading.Thread(target=control, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
