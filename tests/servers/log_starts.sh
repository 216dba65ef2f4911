#!/bin/sh
# Appends `spawn <unix time> <pid>` to the file $1, then runs the rest of the command line in this
# process (same pid): counts and times the starts of any stdio MCP server, for the tests.
log="$1"
shift
echo "spawn $(date +%s.%N) $$" >>"$log"
exec "$@"
