#!/bin/sh
# A slow user: waits $BROWSER_DELAY seconds, then does what oauth-browser.sh does.
set -eu
sleep "${BROWSER_DELAY:-0}"
exec "$(dirname "$0")/oauth-browser.sh" "$@"
