# Starts and stops the two servers every client suite runs against (sourced by scripts/test; source
# it by hand to run one client's suite). Both serve tests/conformance/agents.toml with --auth keys:
#
# - the conformance server, plaintext on loopback: ASKUSER_CONFORMANCE_ADDR, with ASKUSER_API_KEY
#   (tenant `conformance`) and ASKUSER_OTHER_API_KEY (tenant `other`), both with every scope the
#   scenarios use (tests/conformance/README.md);
# - the mTLS server (--tls-cert, --tls-key, --tls-client-ca): ASKUSER_TLS_ADDR, with ASKUSER_TLS_CA
#   (the CA that signed the server's certificate, valid for `localhost` and 127.0.0.1),
#   ASKUSER_TLS_CLIENT_CERT / ASKUSER_TLS_CLIENT_KEY (a client certificate of the same CA) and
#   ASKUSER_TLS_API_KEY (a key of its own store).
#
# Needs target/debug/askuser (cargo build) and openssl. Keys are made offline, before each server
# starts, the way an operator makes the first key.

CONFORMANCE_SCOPES="runs:start,runs:read,runs:answer,runs:cancel,tools:execute,agents:read,asks:create"

# conformance_key DATA_DIR TENANT: makes a key of TENANT in the store under DATA_DIR; prints it.
conformance_key() {
  local log="$1.keys.log"
  target/debug/askuser keys --data-dir "$1" create --tenant "$2" --name conformance \
    --scopes "$CONFORMANCE_SCOPES" 2>"$log" || { cat "$log" >&2; return 1; }
}

# conformance_server NAME ARGS...: starts `askuser serve` with the conformance agents, its files
# under $CONFORMANCE_DIR/NAME; prints its address once it listens. Its pid goes to NAME/pid.
conformance_server() {
  local name="$1" dir="$CONFORMANCE_DIR/$1"
  shift
  target/debug/askuser serve --listen 127.0.0.1:0 --data-dir "$dir/data" --auth keys \
    --config tests/conformance/agents.toml "$@" >"$dir/stdout" 2>"$dir/server.log" &
  echo $! >"$dir/pid"
  for _ in $(seq 1 100); do
    grep -q "listening on" "$dir/stdout" 2>/dev/null && break
    sleep 0.1
  done
  local addr
  addr="$(sed -n 's/^askuser listening on //p' "$dir/stdout")"
  if [ -z "$addr" ]; then
    cat "$dir/server.log" >&2
    echo "the $name server did not start" >&2
    return 1
  fi
  echo "$addr"
}

# conformance_certificates DIR: a CA, a server certificate for localhost and 127.0.0.1 and a client
# certificate, all signed by the CA (EC P-256 keys, PKCS#8 PEM), valid for two days.
conformance_certificates() {
  local dir="$1"
  local new_key=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
  openssl req -x509 "${new_key[@]}" -days 2 -subj "/CN=askuser conformance CA" \
    -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
  printf '%s\n' "basicConstraints = CA:FALSE" "keyUsage = digitalSignature" \
    "extendedKeyUsage = serverAuth" "subjectAltName = DNS:localhost, IP:127.0.0.1" >"$dir/server.ext"
  printf '%s\n' "basicConstraints = CA:FALSE" "keyUsage = digitalSignature" \
    "extendedKeyUsage = clientAuth" >"$dir/client.ext"
  local who
  for who in server client; do
    openssl req -new "${new_key[@]}" -subj "/CN=askuser conformance $who" \
      -keyout "$dir/$who.key" -out "$dir/$who.csr" 2>/dev/null
    openssl x509 -req -in "$dir/$who.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
      -days 2 -extfile "$dir/$who.ext" -out "$dir/$who.pem" 2>/dev/null
  done
}

start_conformance_servers() {
  CONFORMANCE_DIR="$(mktemp -d /tmp/askuser-conformance.XXXXXX)"
  mkdir -p "$CONFORMANCE_DIR/plain" "$CONFORMANCE_DIR/tls" "$CONFORMANCE_DIR/certs"
  local certs="$CONFORMANCE_DIR/certs"
  ASKUSER_API_KEY="$(conformance_key "$CONFORMANCE_DIR/plain/data" conformance)" &&
    ASKUSER_OTHER_API_KEY="$(conformance_key "$CONFORMANCE_DIR/plain/data" other)" &&
    ASKUSER_TLS_API_KEY="$(conformance_key "$CONFORMANCE_DIR/tls/data" conformance)" &&
    conformance_certificates "$certs" &&
    ASKUSER_CONFORMANCE_ADDR="$(conformance_server plain)" &&
    ASKUSER_TLS_ADDR="$(conformance_server tls --tls-cert "$certs/server.pem" \
      --tls-key "$certs/server.key" --tls-client-ca "$certs/ca.pem")" || return 1
  export ASKUSER_CONFORMANCE_ADDR ASKUSER_API_KEY ASKUSER_OTHER_API_KEY ASKUSER_TLS_ADDR \
    ASKUSER_TLS_API_KEY
  export ASKUSER_TLS_CA="$certs/ca.pem" ASKUSER_TLS_CLIENT_CERT="$certs/client.pem" \
    ASKUSER_TLS_CLIENT_KEY="$certs/client.key"
  echo "serving tests/conformance/agents.toml on $ASKUSER_CONFORMANCE_ADDR (--auth keys)" \
    "and on $ASKUSER_TLS_ADDR (mTLS, --auth keys); files in $CONFORMANCE_DIR"
}

stop_conformance_servers() {
  [ -n "${CONFORMANCE_DIR:-}" ] && [ -d "$CONFORMANCE_DIR" ] || return 0
  local pid_file
  for pid_file in "$CONFORMANCE_DIR"/*/pid; do
    [ -f "$pid_file" ] || continue
    kill "$(cat "$pid_file")" 2>/dev/null || true
  done
  rm -rf "$CONFORMANCE_DIR"
}
