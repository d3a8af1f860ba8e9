#!/usr/bin/env bash
# Runs a command beside a throwaway PostgreSQL server, the one Debian's postgresql package
# installs (scripts/install-deps.sh): initdb in a temp dir, the server listening only on a Unix
# socket there (no TCP port to collide with), stopped and removed afterwards.
#   tests/store/with-postgres.sh COMMAND [ARGS...]
# The command gets PERFGATE_TEST_PG (a libpq connection string to the `postgres` database as
# the superuser) and PERFGATE_TEST_PG_CTL (a script taking stop | start, for outage tests).
# PERFGATE_PG_FSYNC=1 keeps fsync on (for benchmarks); by default it is off, for speed.
# As root the server runs as the postgres user (it refuses to run as root). When the server
# cannot start, this fails with its log: the tests never skip for want of one.
set -euo pipefail

bin="${PERFGATE_PG_BIN:-}"
if [ -z "$bin" ]; then
  bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
fi
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "with-postgres: no PostgreSQL server (initdb) under /usr/lib/postgresql/*/bin:" \
    "install the postgresql package (scripts/install-deps.sh)" >&2
  exit 1
fi

tmp="$(mktemp -d /tmp/perfgate-pg.XXXXXX)"
no_fsync="-F"
[ "${PERFGATE_PG_FSYNC:-0}" = 1 ] && no_fsync=""
as_server=()
if [ "$(id -u)" -eq 0 ]; then
  if ! id postgres >/dev/null 2>&1; then
    echo "with-postgres: running as root and there is no postgres user to run the server as" >&2
    exit 1
  fi
  chown postgres: "$tmp"
  as_server=(runuser -u postgres --)
fi

cat >"$tmp/ctl" <<CTL
#!/usr/bin/env bash
# stop | start the test server
set -e
case "\$1" in
  start) exec ${as_server[*]} "$bin/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -w -t 60 \
           -o "-k $tmp -c listen_addresses= $no_fsync" start >/dev/null ;;
  stop) exec ${as_server[*]} "$bin/pg_ctl" -D "$tmp/data" -w -t 60 -m fast stop >/dev/null ;;
  *) echo "usage: \$0 stop|start" >&2; exit 2 ;;
esac
CTL
chmod 755 "$tmp/ctl"

cleanup() {
  "$tmp/ctl" stop >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

if ! "${as_server[@]}" "$bin/initdb" -D "$tmp/data" -U postgres -A trust --no-sync \
  >"$tmp/initdb.log" 2>&1; then
  echo "with-postgres: initdb failed:" >&2
  cat "$tmp/initdb.log" >&2
  exit 1
fi
if ! "$tmp/ctl" start; then
  echo "with-postgres: the server did not start:" >&2
  cat "$tmp/server.log" >&2 || true
  exit 1
fi

export PERFGATE_TEST_PG="host=$tmp port=5432 user=postgres dbname=postgres"
export PERFGATE_TEST_PG_CTL="$tmp/ctl"
echo "with-postgres: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on $tmp" >&2
set +e
"$@"
rc=$?
set -e
exit "$rc"
