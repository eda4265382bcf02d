# Starts and stops a throwaway PostgreSQL server on a free loopback port (sourced by scripts/test
# and scripts/bench). Needs Debian's PostgreSQL (installed here when missing). As root the server
# runs as the `postgres` user, because initdb refuses root.

postgres_bin() {
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

run_as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# start_postgres [extra server settings...]: exports ASKUSER_TEST_DATABASE_URL (the `postgres`
# database; tests create their own databases) and PG_DIR.
start_postgres() {
  local bin
  bin="$(postgres_bin)"
  if [ -z "$bin" ]; then
    echo "installing PostgreSQL from Debian's packages"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    bin="$(postgres_bin)"
  fi
  PG_DIR="$(mktemp -d /tmp/askuser-pg.XXXXXX)"
  [ "$(id -u)" = 0 ] && chown postgres "$PG_DIR"
  local port
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  run_as_postgres "$bin/initdb" -D "$PG_DIR/data" -U askuser --auth=trust -E UTF8 >"$PG_DIR/initdb.log"
  local options="-p $port -k $PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=300"
  for setting in "$@"; do options="$options -c $setting"; done
  run_as_postgres "$bin/pg_ctl" -D "$PG_DIR/data" -o "$options" -l "$PG_DIR/server.log" -w start >/dev/null
  export PG_BIN="$bin"
  export ASKUSER_TEST_DATABASE_URL="postgres://askuser@127.0.0.1:$port/postgres"
  echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port ($PG_DIR)"
}

stop_postgres() {
  if [ -n "${PG_DIR:-}" ] && [ -d "$PG_DIR/data" ]; then
    run_as_postgres "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
  fi
}
