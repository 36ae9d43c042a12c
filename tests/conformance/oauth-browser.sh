#!/bin/sh
# The "browser" of the auth conformance runs ($BROWSER): requests the authorization URL and
# follows its redirects, which end at toolwright's loopback listener. Node 22's fetch (the
# suite's own Node), run as argv: the URL is data, never shell text.
exec node -e 'fetch(process.argv[1], { redirect: "follow" }).then(r => r.text()).catch(e => { console.error(String(e)); process.exit(1); });' "$1"
