# Sourced by scripts/test: makes sure the backing services the tests talk to
# are running, and exports where they are.
#
#   PLANSHARE_TEST_REDIS_URL    Redis: the machine's on 127.0.0.1:6379 when it
#                               answers, else one started here on a free port
#   PLANSHARE_TEST_S3_ENDPOINT  an S3 server (moto, from PyPI, in a venv under
#   PLANSHARE_TEST_S3_BUCKET    $PLANSHARE_TOOLS) started here on a free port
#   PLANSHARE_TEST_DATABASE_URL PostgreSQL: the machine's cluster on
#                               127.0.0.1:5432, started here when it is down
#
# Variables already set are respected (point the tests at your own servers).
# Redis and moto started here are stopped by stop_test_services; a
# PostgreSQL cluster started here is left running.

PLANSHARE_TOOLS=${PLANSHARE_TOOLS:-$HOME/.cache/planshare}
MOTO_VERSION=5.2.5
services_dir=$(mktemp -d -t planshare-services.XXXXXX)
started_pids=()

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_for() { # description, command...
  local what=$1; shift
  for _ in $(seq 200); do "$@" >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "test services: $what did not come up" >&2
  return 1
}

start_redis() {
  if [ -n "${PLANSHARE_TEST_REDIS_URL:-}" ]; then
    echo "redis: using $PLANSHARE_TEST_REDIS_URL"
    return
  fi
  if redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; then
    export PLANSHARE_TEST_REDIS_URL=redis://127.0.0.1:6379
    echo "redis: the machine's, on 127.0.0.1:6379"
    return
  fi
  local port; port=$(free_port)
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$services_dir" --logfile "$services_dir/redis.log" &
  started_pids+=($!)
  wait_for "redis on $port" redis-cli -h 127.0.0.1 -p "$port" ping
  export PLANSHARE_TEST_REDIS_URL="redis://127.0.0.1:$port"
  echo "redis: started on 127.0.0.1:$port"
}

start_s3() {
  export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-test} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-test}
  export AWS_REGION=${AWS_REGION:-us-east-1}
  export PLANSHARE_TEST_S3_BUCKET=${PLANSHARE_TEST_S3_BUCKET:-planshare-test}
  if [ -n "${PLANSHARE_TEST_S3_ENDPOINT:-}" ]; then
    echo "s3: using $PLANSHARE_TEST_S3_ENDPOINT"
  else
    local venv="$PLANSHARE_TOOLS/venv"
    if ! "$venv/bin/python" -c "import moto; assert moto.__version__ == '$MOTO_VERSION'" 2>/dev/null; then
      echo "s3: installing moto[server]==$MOTO_VERSION into $venv"
      python3 -m venv "$venv"
      "$venv/bin/pip" install -q --disable-pip-version-check "moto[server]==$MOTO_VERSION"
    fi
    local port; port=$(free_port)
    # moto with its writes serialised (conditional puts atomic, as on S3).
    "$venv/bin/python" "$(dirname "${BASH_SOURCE[0]}")/moto-server.py" 127.0.0.1 "$port" >"$services_dir/moto.log" 2>&1 &
    started_pids+=($!)
    wait_for "moto on $port" curl -sf "http://127.0.0.1:$port/"
    export PLANSHARE_TEST_S3_ENDPOINT="http://127.0.0.1:$port"
    echo "s3: moto started on 127.0.0.1:$port"
  fi
  # The bucket the HTTP suites share (each test server uses a prefix of its own).
  curl -sf -X PUT "$PLANSHARE_TEST_S3_ENDPOINT/$PLANSHARE_TEST_S3_BUCKET" >/dev/null || true
}

stop_test_services() {
  for pid in "${started_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${started_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$services_dir"
}

# PostgreSQL: the machine's on 127.0.0.1:5432 (trust auth) when it answers,
# else the local cluster is started (scripts/install-deps installs the
# package when it is missing). Tests create and drop databases of their own
# through PLANSHARE_TEST_DATABASE_URL.
start_postgres() {
  if [ -n "${PLANSHARE_TEST_DATABASE_URL:-}" ]; then
    echo "postgres: using the configured PLANSHARE_TEST_DATABASE_URL"
    return
  fi
  if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    local version
    version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)
    if [ -z "$version" ]; then
      echo "postgres: no cluster found (install the postgresql package)" >&2
      return 1
    fi
    echo "postgres: starting cluster $version/main"
    pg_ctlcluster --skip-systemctl-redirect "$version" main start
    wait_for "postgres on 5432" pg_isready -q -h 127.0.0.1 -p 5432
  fi
  export PLANSHARE_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres
  echo "postgres: on 127.0.0.1:5432"
}
