#!/bin/sh
# Runs a command and checks its exit status, for ctests whose output is matched by
# PASS_REGULAR_EXPRESSION (ctest ignores the exit status of those): on a wrong status it prints a
# line that the test's FAIL_REGULAR_EXPRESSION ("expect_status: FAILED") matches, and exits 1.
# usage: expect_status.sh ok|refusal COMMAND [ARG...]
#   ok       the command must exit 0
#   refusal  the command must exit with a status from 1 to 125 (an error it reports, not a crash
#            or a signal: 126+ is a shell or signal status)
want=$1
shift
"$@"
rc=$?
case $want in
ok) [ "$rc" -eq 0 ] && exit 0 ;;
refusal) [ "$rc" -ge 1 ] && [ "$rc" -le 125 ] && exit 0 ;;
*)
    echo "expect_status: FAILED: unknown expectation '$want' (ok or refusal)"
    exit 1
    ;;
esac
echo "expect_status: FAILED: exit status $rc, expected $want"
exit 1
