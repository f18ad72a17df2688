# Shared by the CLI test scripts (source it after setting $tmp and fail=0): expect <want-rc> <want-substring>
# <cmd...> runs the command and fails the script (fail=1) unless it exits with want-rc and its stdout or stderr
# holds want-substring. A caller may define expect_extra_checks (run after each command) for checks of its own.
expect() {
  local want_rc=$1 want=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" != "$want_rc" ] || ! grep -qF -- "$want" "$tmp/err" "$tmp/out"; then
    echo "FAIL: $* -> rc $rc (want $want_rc), output lacks: $want"
    sed 's/^/    /' "$tmp/err" "$tmp/out" | head -20
    fail=1
  else
    echo "ok: $* -> rc $rc, '$want'"
  fi
  if declare -F expect_extra_checks >/dev/null; then expect_extra_checks "$@"; fi
}
