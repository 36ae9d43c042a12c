# bench/sql.sh: the SQL group of bench/run's declared-tool section (issue 41), sourced by
# bench/run.
#
# One throwaway PostgreSQL cluster (Debian's postgresql: initdb in a temp directory, the
# server on a free loopback port, as `nobody` when run as root since PostgreSQL refuses
# root) with one table, `items` (10,000 rows, `id integer primary key`), and one query, a
# primary-key lookup: `select id, name, price from items where id = $1` with id 4242.
# Rows of the group, all over stdio and all against the same cluster:
#   pg             the floor: `loadgen pg-query`, a plain client (the postgres crate) with
#                  the statement prepared once per connection
#   toolwright-sql `toolwright serve --config sql.yaml`: a `sql` tool, read-only (so a
#                  read-only transaction with a statement timeout around every call)
#   toolbox-sql    MCP Toolbox (the binary of bench/peers/toolbox) with a `postgres` source
#                  and a `postgres-sql` tool of the same statement
# Every answer is checked for the row's name, "item 4242".
#
# Uses from bench/run: TW, LOADGEN, RES, STAMP, TOOLBOX_BIN, MISSING, SEQ_SERVER, say, skipped.
# Defines SQL_ROWS, SQL_URL, sql_setup, sql_stop, sql_cmd.

SQL_ROWS=(pg toolwright-sql toolbox-sql)
SQL_STATEMENT='select id, name, price from items where id = $1'
SQL_ID=4242
SQL_EXPECT='item 4242'
SQL_PASSWORD="bench-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
SQL_DIR=""
SQL_PGBIN=""
SQL_PORT=""
SQL_URL=""
SQL_AS=()

sql_stop() {
  if [ -n "$SQL_DIR" ] && [ -n "$SQL_PGBIN" ]; then
    "${SQL_AS[@]}" "$SQL_PGBIN/pg_ctl" -D "$SQL_DIR/data" -m immediate stop >/dev/null 2>&1
    rm -rf "$SQL_DIR"
  fi
  SQL_DIR=""
}

# The newest server binaries of Debian's layout, or nothing.
sql_pg_bin() {
  local b found=""
  for b in /usr/lib/postgresql/*/bin; do
    [ -x "$b/postgres" ] && [ -x "$b/initdb" ] && found="$b"
  done
  printf '%s' "$found"
}

# Starts the cluster, fills the table and writes both servers' configurations; on failure
# marks the group's rows missing with the reason.
sql_setup() {
  local why="" row
  SQL_PGBIN="$(sql_pg_bin)"
  if [ -z "$SQL_PGBIN" ]; then
    why="no PostgreSQL server (apt-get install postgresql)"
  elif ! sql_start >"$RES/postgres-start.log" 2>&1; then
    why="PostgreSQL did not start: $(tail -2 "$RES/postgres-start.log" | tr '\n' ' ' | tr -d '"')"
  fi
  if [ -n "$why" ]; then
    for row in "${SQL_ROWS[@]}"; do MISSING[$row]="$why"; done
    say "sql: $why"
    return
  fi
  [ -n "${MISSING[toolwright]:-}" ] && MISSING[toolwright-sql]="toolwright did not build"
  [ -n "${MISSING[toolbox]:-}" ] && MISSING[toolbox-sql]="${MISSING[toolbox]}"
  say "sql: PostgreSQL $("$SQL_PGBIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$SQL_PORT"
  cat > "$RES/sql.yaml" <<YAML
sources:
  shop: {postgres: "postgres://bench:\${BENCH_PG_PASSWORD}@127.0.0.1:$SQL_PORT/bench"}
tools:
  - name: get_item
    description: Look up one item of the shop by its id. Returns its id, name and price.
    inputSchema:
      type: object
      properties: {id: {type: integer, description: The item's id.}}
      required: [id]
    sql: {source: shop, statement: "$SQL_STATEMENT", params: [id], result: one}
    annotations: {readOnlyHint: true}
YAML
  cat > "$RES/toolbox-sql.yaml" <<YAML
sources:
  shop:
    kind: postgres
    host: 127.0.0.1
    port: $SQL_PORT
    database: bench
    user: bench
    password: $SQL_PASSWORD
tools:
  get_item:
    kind: postgres-sql
    source: shop
    description: Look up one item of the shop by its id. Returns its id, name and price.
    parameters:
      - name: id
        type: integer
        description: The item's id.
    statement: $SQL_STATEMENT
YAML
}

sql_start() {
  SQL_DIR="$(mktemp -d /tmp/toolwright-bench-pg.XXXXXX)"
  printf '%s' "$SQL_PASSWORD" > "$SQL_DIR/pw"
  SQL_AS=()
  if [ "$(id -u)" = 0 ]; then
    chown -R nobody "$SQL_DIR"
    SQL_AS=(runuser -u nobody --)
  fi
  SQL_PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  "${SQL_AS[@]}" "$SQL_PGBIN/initdb" -D "$SQL_DIR/data" -U postgres --auth=scram-sha-256 \
    --pwfile="$SQL_DIR/pw" -E UTF8 --locale=C >"$SQL_DIR/initdb.log" 2>&1 || { cat "$SQL_DIR/initdb.log"; return 1; }
  # The cluster runs on the server CPU, as the HTTP group's JSON API does (SEQ_SERVER, from
  # bench/run): every row then reaches it the same way, instead of the floor's backend
  # sharing its client's CPU in some runs and not in others.
  "${SQL_AS[@]}" "${SEQ_SERVER[@]}" "$SQL_PGBIN/pg_ctl" -D "$SQL_DIR/data" -l "$SQL_DIR/log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $SQL_PORT -k $SQL_DIR -c max_connections=200" start >/dev/null 2>&1 \
    || { cat "$SQL_DIR/log"; return 1; }
  local psql="$SQL_PGBIN/psql"
  [ -x "$psql" ] || psql=psql
  PGPASSWORD="$SQL_PASSWORD" "$psql" -h 127.0.0.1 -p "$SQL_PORT" -U postgres -d postgres -X -q \
    -v ON_ERROR_STOP=1 <<SQL || return 1
create role bench login password '$SQL_PASSWORD';
create database bench owner bench;
\\connect bench
set role bench;
create table items (id integer primary key, name text not null, price integer not null);
insert into items select g, 'item ' || g, g % 1000 from generate_series(1, 10000) g;
analyze items;
SQL
  SQL_URL="postgres://bench:$SQL_PASSWORD@127.0.0.1:$SQL_PORT/bench"
}

# sql_cmd ROW: sets CMD and CALL (loadgen options) for a server row of the group.
sql_cmd() {
  CALL=(--tool get_item --arguments "{\"id\":$SQL_ID}" --expect-text "$SQL_EXPECT")
  case "$1" in
    toolwright-sql) CMD=("$TW" serve --config "$RES/sql.yaml"); CALL+=(--env "BENCH_PG_PASSWORD=$SQL_PASSWORD") ;;
    toolbox-sql) CMD=("$TOOLBOX_BIN" --stdio --config "$RES/toolbox-sql.yaml" --disable-version-check --disable-reload) ;;
  esac
}
