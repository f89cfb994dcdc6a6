"""Checks planshare-server's system calls under strace (see scripts/syscall-checks)."""

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

BAD_PATHS = [
    "/api/paste/..", "/api/paste/%2e%2e", "/api/paste/..%2f..%2fetc%2fpasswd",
    "/api/paste/../../etc/passwd", "/api/paste/a%2Fbcdefgh", "/api/paste//etc/passwd",
    "/api/paste/%00abcdef", "/api/paste/abc%25def", "/api/paste/*", "/api/paste/%D0%B0bcdefg",
    "/api/paste/abcdefgh", "/api/paste/ABCDEFGHabcdefgh",
]
CREATES = 20


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def request(port, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, data


def raw_get(port, path):
    # http.client would normalise nothing, but send the path exactly anyway.
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    return int(data.split(b" ")[1])


class Traced:
    """planshare-server under strace with its own data directory and port."""

    def __init__(self, binary, strace_args, sync):
        self.work = tempfile.mkdtemp(prefix="planshare-strace-")
        self.root = os.path.realpath(os.path.join(self.work, "data", "pastes"))
        self.trace = os.path.join(self.work, "trace.txt")
        self.port = free_port()
        env = dict(os.environ, PLANSHARE_HOST="127.0.0.1", PLANSHARE_PORT=str(self.port),
                   PLANSHARE_DATA_DIR=os.path.join(self.work, "data"), PLANSHARE_LOG="error",
                   PLANSHARE_RATE_LIMITS="off", PLANSHARE_FS_SYNC=sync)
        self.proc = subprocess.Popen(["strace", "-f", "-qq", "-o", self.trace, *strace_args, binary],
                                     env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while True:
            try:
                if request(self.port, "GET", "/healthz")[0] == 200:
                    return
            except OSError:
                pass
            if time.time() > deadline or self.proc.poll() is not None:
                self.stop()
                sys.exit("syscall-checks: server did not start under strace")
            time.sleep(0.05)

    def stop(self):
        # Stop the server itself (strace's child); strace exits with it.
        children = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout.split()
        for pid in children:
            os.kill(int(pid), 15)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            for pid in children:
                os.kill(int(pid), 9)
            self.proc.wait()

    def visible_pastes(self):
        return [f for _, _, files in os.walk(self.root) for f in files if not f.startswith(".tmp-")]


def joined(trace_lines):
    """strace -f splits a system call that another thread interrupts into
    `PID name(args <unfinished ...>` and, later, `PID <... name resumed>rest`;
    rejoin each pair into one call. Returns `(start, end, text)` per call in
    the order the calls completed, `start`/`end` being the trace line numbers
    where the call began and returned (equal for a call strace printed whole:
    nothing happened in between). "A before B" is then `A.end < B.start`:
    A had returned before B began."""
    out, open_at = [], {}
    for n, line in enumerate(trace_lines):
        m = re.match(r"(\d+)\s+<\.\.\. \w+ resumed>(.*)", line)
        if m and m.group(1) in open_at:
            start, text = open_at.pop(m.group(1))
            out.append((start, n, text + m.group(2)))
            continue
        m = re.match(r"(\d+)\s+.*\s<unfinished \.\.\.>$", line)
        if m:
            open_at[m.group(1)] = (n, line[: -len(" <unfinished ...>")])
            continue
        out.append((n, n, line))
    return out


def ordering(calls, paste_id, sync):
    """The write order of one paste: its data durable < link into place <
    the link durable < the 201. Durable means, with `file`, an fsync of the
    temporary file (then of the shard directory) and, with `batch` (group
    commit), a syncfs of the store's filesystem that began after the last
    write to the temporary file (then after the link) and returned before
    the next step began. Returns a problem or None."""
    hexid = paste_id.encode().hex()
    tmp = "/.tmp-" + hexid
    link = next((c for c in calls if "link" in c[2] and tmp in c[2] and c[2].rstrip().endswith("= 0")), None)
    reply = next((c for c in calls if "HTTP/1.1 201" in c[2] and f'\\"id\\":\\"{paste_id}\\"' in c[2]), None)
    if link is None or reply is None:
        return f"{paste_id}: link={link is not None} 201={reply is not None}"
    written = max((c[1] for c in calls if tmp in c[2] and c[1] < link[0] and not re.search(r"\bf(data)?sync\(", c[2])),
                  default=None)
    if sync == "file":
        data = [c for c in calls if re.search(r"\bf(data)?sync\(\d+<[^>]*" + re.escape(tmp), c[2])]
        entry = [c for c in calls if re.search(r"\bfsync\(\d+<[^>]*/" + hexid[:4] + r">\)", c[2])]
    else:
        data = entry = [c for c in calls if re.match(r"\d+\s+syncfs\(", c[2]) and c[2].rstrip().endswith("= 0")]
    data_ok = written is not None and any(written < c[0] and c[1] < link[0] for c in data)
    entry_ok = any(link[1] < c[0] and c[1] < reply[0] for c in entry)
    if data_ok and entry_ok:
        return None
    return (f"{paste_id} ({sync}): data durable before the link: {data_ok}; "
            f"link durable before the 201: {entry_ok}")


# Read by glibc's malloc once per process, when a thread needs a new arena
# and eight exist already (every Rust thread allocates there as it starts:
# pthread_getattr_np). With enough threads started before serving, that
# thread is a blocking-pool thread started while serving. And read by
# glibc's malloc once per process, the first time it shrinks the heap of a
# thread's arena (check_may_shrink_heap): SQLite allocates with the C
# library's malloc on the catalog's worker thread, so when that happens
# depends on the catalog's work, not on a request's input. Fixed paths that
# no request input reaches.
LIBC_READS = frozenset({"/sys/devices/system/cpu/online", "/proc/sys/vm/overcommit_memory"})


def injected_failures(binary):
    """A failing flush or link is a 503, never a 201, and leaves no visible paste."""
    failures = []
    # (std::fs::hard_link is linkat(2) on Linux.)
    cases = (("batch", "syncfs", "EIO"), ("file", "fsync", "EIO"),
             ("batch", "linkat", "ENOSPC"), ("file", "linkat", "ENOSPC"))
    for sync, syscall, errno in cases:
        server = Traced(binary, ["-e", f"trace={syscall}", "-e", f"inject={syscall}:error={errno}"], sync)
        what = f"{sync}: {syscall} -> {errno}"
        try:
            for _ in range(3):
                conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
                conn.request("POST", "/api/paste", body=json.dumps({"data": "abc"}))
                resp = conn.getresponse()
                resp.read()
                if resp.status != 503 or resp.getheader("Retry-After") is None:
                    failures.append(f"{what}: create answered {resp.status}")
                conn.close()
            if request(server.port, "GET", "/healthz")[0] != 200:
                failures.append(f"{what}: liveness failed")
        finally:
            server.stop()
        if server.visible_pastes():
            failures.append(f"{what}: visible pastes after failed writes: {server.visible_pastes()}")
    return failures, len(cases)


def traced_creates(binary, sync):
    """CREATES creates and the hostile reads under strace; returns
    (ordering and containment problems, paths checked)."""
    server = Traced(binary, ["-yy", "-s", "2048", "-e",
                             "trace=%file,fsync,fdatasync,syncfs,write,writev,sendto,sendmsg,accept4,accept"],
                    sync)
    port, root, trace = server.port, server.root, server.trace
    catalog = os.path.realpath(os.path.join(server.work, "data", "catalog.sqlite"))
    try:
        ids = []
        for i in range(CREATES):
            status, body = request(port, "POST", "/api/paste", json.dumps({"data": f"Q{i}" * 50}))
            assert status == 201, (status, body)
            ids.append(json.loads(body)["id"])
        for path in BAD_PATHS:
            status = raw_get(port, path)
            assert 400 <= status < 500, (path, status)
    finally:
        server.stop()

    calls = joined(open(trace, encoding="utf-8", errors="replace").read().splitlines())
    failures = []

    # The write order, per paste.
    for paste_id in ids:
        problem = ordering(calls, paste_id, sync)
        if problem:
            failures.append("ordering for " + problem)

    # Containment: no path outside the store root, after the server started serving.
    start = next((n for n, (_, _, l) in enumerate(calls) if re.search(r"\baccept4?\(", l)), len(calls))
    touched = 0
    for _, _, line in calls[start:]:
        m = re.match(r"\d+\s+(\w+)\((.*)", line)
        if not m or m.group(1) in ("write", "writev", "sendto", "sendmsg", "accept", "accept4",
                                   "fsync", "fdatasync", "syncfs"):
            continue
        # Quoted strings are the paths passed in (fd annotations like
        # AT_FDCWD</cwd> only describe the base of a relative path).
        for path in re.findall(r'"([^"]*)"', m.group(2)):
            if path == "":  # AT_EMPTY_PATH: the call is about an fd already open
                continue
            touched += 1
            real = os.path.realpath(path) if path.startswith("/") else path
            # The tenant catalog (SQLite, with its -wal/-shm) is the one other file.
            if real.startswith(catalog + "-") or real == catalog:
                continue
            # SQLite opens the catalog's directory to fsync it after making
            # the catalog's WAL or journal file, which happens whenever a
            # pooled connection finds none (after the last one closed).
            if real == os.path.dirname(catalog):
                continue
            # Fixed paths the C library opens by itself, whatever the input.
            if path in LIBC_READS:
                continue
            if not path.startswith("/") or not (real + "/").startswith(root + "/"):
                failures.append(f"outside the store root ({sync}): {line.strip()[:200]}")
    return failures, touched


def main():
    binary = sys.argv[1]
    failures, touched, ordered = [], 0, 0
    for sync in ("batch", "file"):
        found, paths = traced_creates(binary, sync)
        failures += found
        touched += paths
        ordered += CREATES
    injected, faults = injected_failures(binary)
    failures += injected
    print(f"syscall-checks: {ordered} creates ordered (store.fs.sync batch and file), "
          f"{touched} paths checked, {faults} injected I/O faults, {len(failures)} problems")
    for f in failures[:20]:
        print("  " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
