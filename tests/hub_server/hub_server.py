#!/usr/bin/env python3
"""A fake Hugging Face hub for the tests (python3 standard library only).

Serves the repos found under --root (ROOT/ORG/NAME/<files>, sub-folders allowed, dot-files hidden) the way
huggingface.co does for huggingface_hub and llama.cpp:

  GET  /api/models/ORG/NAME[/revision/REV]   {"id", "sha", "siblings": [{"rfilename"}]}
  HEAD/GET /ORG/NAME/resolve/REV/FILE        small files: 200 + body, ETag = git blob sha1;
                                             "LFS" files (.gguf .safetensors .bin .pt): 302 to the CDN with
                                             X-Linked-Etag = "sha256", X-Linked-Size, X-Repo-Commit
  GET  /cdn/SHA256                           the content, with Range support (206 / 416)

The commit of a repo is sha1("commit:" + repo), or the content of ROOT/ORG/NAME/.commit when present.
Unknown repos answer 401 with X-Error-Code: RepoNotFound (as the hub does without a token).

Options for the tests: --token T (401 unless "Authorization: Bearer T" on /api and /resolve),
--cdn-host H (absolute redirect to http://H:PORT/cdn/..., a different host than the endpoint's),
--drop-after N / --stall-after N (the first --fault-times CDN GETs send N body bytes, then close the
connection / stop sending), --corrupt S (CDN bodies of files whose path contains S get a flipped byte),
--rename ORG/OLD=ORG/NEW (307 from the old name, as for a renamed repo), --log FILE (one JSON line per
request: method, path, range, auth, host), --port-file FILE (the bound port, written once listening;
--port 0 picks a free one).
"""
import argparse
import hashlib
import http.server
import json
import os
import socket
import sys
import threading
import time
import urllib.parse

LFS_EXT = (".gguf", ".safetensors", ".bin", ".pt")


class Hub:
    def __init__(self, args):
        self.args = args
        self.root = os.path.abspath(args.root)
        self.lock = threading.Lock()
        self.faults_left = args.fault_times
        self.renames = dict(r.split("=", 1) for r in args.rename)
        self.by_sha = {}  # sha256 -> (repo, file)
        for repo in self.repos():
            for f in self.files(repo):
                self.by_sha[self.sha256(repo, f)] = (repo, f)

    def repos(self):
        out = []
        for org in sorted(os.listdir(self.root)):
            if os.path.isdir(os.path.join(self.root, org)):
                for name in sorted(os.listdir(os.path.join(self.root, org))):
                    if os.path.isdir(os.path.join(self.root, org, name)):
                        out.append(org + "/" + name)
        return out

    def files(self, repo):
        base = os.path.join(self.root, repo)
        out = []
        for d, dirs, fs in os.walk(base):
            dirs[:] = [x for x in dirs if not x.startswith(".")]
            for f in fs:
                if not f.startswith("."):
                    out.append(os.path.relpath(os.path.join(d, f), base).replace(os.sep, "/"))
        return sorted(out)

    def commit(self, repo):
        p = os.path.join(self.root, repo, ".commit")
        if os.path.exists(p):
            return open(p).read().strip()
        return hashlib.sha1(("commit:" + repo).encode()).hexdigest()

    def content(self, repo, f):
        with open(os.path.join(self.root, repo, f), "rb") as fh:
            return fh.read()

    def sha256(self, repo, f):
        return hashlib.sha256(self.content(repo, f)).hexdigest()

    def git_sha1(self, repo, f):
        data = self.content(repo, f)
        return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()

    def log(self, entry):
        if self.args.log:
            with self.lock:
                with open(self.args.log, "a") as fh:
                    fh.write(json.dumps(entry) + "\n")

    def take_fault(self):
        with self.lock:
            if self.faults_left > 0:
                self.faults_left -= 1
                return True
            return False


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hub = None  # set in main()

    def log_message(self, fmt, *args):
        pass

    def do_HEAD(self):
        self.handle_any(head=True)

    def do_GET(self):
        self.handle_any(head=False)

    def send(self, status, headers=None, body=b"", head=False):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def error(self, status, code, message, head):
        body = json.dumps({"error": message}).encode()
        self.send(status, {"Content-Type": "application/json", "X-Error-Code": code, "X-Error-Message": message},
                  body, head)

    def authorized(self):
        tok = self.hub.args.token
        return not tok or self.headers.get("Authorization") == "Bearer " + tok

    def handle_any(self, head):
        hub = self.hub
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        hub.log({"method": self.command, "path": path, "range": self.headers.get("Range"),
                 "auth": self.headers.get("Authorization"), "host": self.headers.get("Host")})
        parts = [p for p in path.split("/") if p]
        for old, new in self.hub.renames.items():  # a renamed repo: 307 to the new name, relative
            o = old.split("/")
            if parts[:2] == o or parts[:4] == ["api", "models"] + o:
                i = 0 if parts[:2] == o else 2
                loc = "/" + "/".join(parts[:i] + new.split("/") + parts[i + 2:])
                return self.send(307, {"Location": urllib.parse.quote(loc)}, b"", head)
        if len(parts) >= 2 and parts[0] == "cdn":
            return self.cdn(parts[1], head)
        if len(parts) >= 4 and parts[0] == "api" and parts[1] == "models":
            return self.api(parts[2] + "/" + parts[3], parts[4:], head)
        if len(parts) >= 5 and parts[2] == "resolve":
            return self.resolve(parts[0] + "/" + parts[1], parts[3], "/".join(parts[4:]), head)
        self.error(404, "NotFound", "no such route", head)

    def known_repo(self, repo, head):
        if not self.authorized():
            self.error(401, "Unauthorized", "Invalid credentials in Authorization header", head)
            return False
        if repo not in self.hub.repos():
            self.error(401, "RepoNotFound", "Repository not found", head)
            return False
        return True

    def api(self, repo, rest, head):
        if not self.known_repo(repo, head):
            return
        rev = "main"
        if len(rest) >= 2 and rest[0] == "revision":
            rev = rest[1]
        commit = self.hub.commit(repo)
        if rev not in ("main", commit):
            return self.error(404, "RevisionNotFound", "Invalid rev id: " + rev, head)
        body = json.dumps({"_id": "x", "id": repo, "modelId": repo, "sha": commit, "private": False,
                           "siblings": [{"rfilename": f} for f in self.hub.files(repo)]}).encode()
        self.send(200, {"Content-Type": "application/json"}, body, head)

    def resolve(self, repo, rev, f, head):
        if not self.known_repo(repo, head):
            return
        commit = self.hub.commit(repo)
        if rev not in ("main", commit):
            return self.error(404, "RevisionNotFound", "Invalid rev id: " + rev, head)
        if f not in self.hub.files(repo):
            return self.error(404, "EntryNotFound", "Entry not found", head)
        if f.endswith(LFS_EXT):
            sha = self.hub.sha256(repo, f)
            loc = "/cdn/" + sha + "?name=" + urllib.parse.quote(f)
            if self.hub.args.cdn_host:
                loc = "http://%s:%d%s" % (self.hub.args.cdn_host, self.server.server_address[1], loc)
            size = len(self.hub.content(repo, f))
            return self.send(302, {"Location": loc, "X-Repo-Commit": commit, "X-Linked-Etag": '"%s"' % sha,
                                   "X-Linked-Size": str(size), "ETag": '"%s"' % self.hub.git_sha1(repo, f)},
                             b"", head)
        data = self.hub.content(repo, f)
        hdrs = {"X-Repo-Commit": commit, "ETag": '"%s"' % self.hub.git_sha1(repo, f),
                "Content-Type": "application/octet-stream"}
        self.send_range(data, hdrs, head, faults=False)

    def cdn(self, sha, head):
        if sha not in self.hub.by_sha:
            return self.error(404, "NotFound", "no such object", head)
        repo, f = self.hub.by_sha[sha]
        data = self.hub.content(repo, f)
        if self.hub.args.corrupt and self.hub.args.corrupt in f and data:
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        self.send_range(data, {"ETag": '"%s"' % sha, "Accept-Ranges": "bytes"}, head, faults=not head)

    def send_range(self, data, hdrs, head, faults):
        rng = self.headers.get("Range")
        start, end, status = 0, len(data) - 1, 200
        if rng and rng.startswith("bytes="):
            a, _, b = rng[6:].partition("-")
            start = int(a)
            end = int(b) if b else len(data) - 1
            if start >= len(data):
                return self.send(416, {"Content-Range": "bytes */%d" % len(data)}, b"", head)
            end = min(end, len(data) - 1)
            status = 206
            hdrs = dict(hdrs, **{"Content-Range": "bytes %d-%d/%d" % (start, end, len(data))})
        body = data[start:end + 1]
        args = self.hub.args
        fault = faults and (args.drop_after is not None or args.stall_after is not None) and self.hub.take_fault()
        if not fault:
            return self.send(status, hdrs, body, head)
        self.send_response(status)
        for k, v in hdrs.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        n = args.drop_after if args.drop_after is not None else args.stall_after
        self.wfile.write(body[:n])
        self.wfile.flush()
        if args.stall_after is not None:
            time.sleep(args.stall_seconds)
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close_connection = True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--log")
    ap.add_argument("--token")
    ap.add_argument("--cdn-host")
    ap.add_argument("--drop-after", type=int)
    ap.add_argument("--stall-after", type=int)
    ap.add_argument("--stall-seconds", type=float, default=60.0)
    ap.add_argument("--fault-times", type=int, default=1)
    ap.add_argument("--corrupt")
    ap.add_argument("--rename", action="append", default=[], metavar="OLD=NEW")
    args = ap.parse_args()
    Handler.hub = Hub(args)
    srv = http.server.ThreadingHTTPServer((args.host, args.port), Handler)
    srv.daemon_threads = True
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as fh:
            fh.write(str(srv.server_address[1]))
        os.rename(tmp, args.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
