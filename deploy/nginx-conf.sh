# nginx_conf PREFIX PORT ERROR_LOG UPSTREAMS [LOCATION_LINES]: prints the nginx configuration of
# toolwright replicas behind one nginx on 127.0.0.1:PORT, with PREFIX as its directory for
# pid and temp files. UPSTREAMS holds the `server ...;` lines (and any `keepalive`);
# LOCATION_LINES are added to the proxied location. Sourced by deploy/run.sh and by
# bench/replicas.sh, so that the benchmark measures the deployment's configuration.
nginx_conf() {
  local prefix="$1" port="$2" error_log="$3" upstreams="$4" extra="${5:-}"
  cat <<CONF
# Workers as the current user too (nginx ignores this, with a warning, unless run as root).
user $(id -un) $(id -gn);
worker_processes 1;
daemon off;
pid $prefix/nginx.pid;
error_log $error_log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $prefix/body;
  proxy_temp_path $prefix/proxy;
  fastcgi_temp_path $prefix/fastcgi;
  uwsgi_temp_path $prefix/uwsgi;
  scgi_temp_path $prefix/scgi;
  upstream toolwright {
    # Round-robin, no affinity: any replica serves any request of any session.
$upstreams  }
  server {
    listen 127.0.0.1:$port;
    location / {
      proxy_pass http://toolwright;
      proxy_http_version 1.1;
      proxy_set_header Host \$http_host;
      # Who the client is: the replicas trust this proxy's word (--trusted-proxy).
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      # Server-Sent Events: no buffering, and streams may stay open for long.
      proxy_buffering off;
      proxy_cache off;
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
      # A replica that died: the request goes to the next one.
      proxy_next_upstream error timeout http_502;
$extra
    }
  }
}
CONF
}
