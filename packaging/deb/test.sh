#!/usr/bin/env bash
# Builds the Debian package, inspects it, installs it, checks the installed
# sluice and man pages, purges it and checks nothing is left. Needs root and
# dpkg; .ci/run calls it on CI (CI=true) and whenever both are there.
#
#   packaging/deb/test.sh            # builds with build.sh, then tests
#   packaging/deb/test.sh <deb>      # tests a package build.sh made
#
# Cost: the release build of build.sh (minutes from scratch on 2 cores,
# seconds when current), then about 10 s. It refuses to run when a sluice
# package or a sluice user already exists (it would remove them).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
fail() { echo "packaging/deb/test.sh: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

[ "$(id -u)" -eq 0 ] || fail "must run as root (it installs the package)"
if dpkg-query -W -f='${Status}' sluice 2>/dev/null | grep -q installed; then
    fail "a sluice package is already installed; not touching it"
fi
getent passwd sluice >/dev/null && fail "a user sluice already exists; not touching it"

out="$(mktemp -d)"
trap 'rm -rf "$out"; dpkg --purge sluice >/dev/null 2>&1 || true' EXIT

if [ -n "${1:-}" ]; then
    deb="$1"
else
    step "build"
    deb="$("$here/build.sh" "$out" | tail -n1)"
fi
[ -f "$deb" ] || fail "build.sh made no package"

step "inspect $(basename "$deb")"
dpkg-deb -I "$deb"
contents="$(dpkg-deb -c "$deb")"
echo "$contents"
for f in ./usr/sbin/sluice ./etc/sluice/sluice.cfg ./lib/systemd/system/sluice.service \
    ./usr/lib/tmpfiles.d/sluice.conf ./etc/rsyslog.d/49-sluice.conf ./etc/logrotate.d/sluice \
    ./usr/share/man/man1/sluice.1.gz ./usr/share/man/man5/sluice.cfg.5.gz \
    ./usr/share/doc/sluice/copyright ./usr/share/doc/sluice/changelog.gz; do
    grep -q " $f\$" <<<"$contents" || fail "$f not in the package"
done
# Files belong to root (--root-owner-group), the binary is executable.
grep -v ' root/root ' <<<"$contents" && fail "files not owned by root/root"
grep -q '^-rwxr-xr-x .* ./usr/sbin/sluice$' <<<"$contents" || fail "/usr/sbin/sluice mode"
[ "$(dpkg-deb -f "$deb" Package)" = sluice ] || fail "Package field"
dpkg-deb -f "$deb" Depends | grep -q 'libc6 (>= ' || fail "Depends has no libc6"
conffiles="$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)"
grep -qx /etc/sluice/sluice.cfg <<<"$conffiles" || fail "sluice.cfg is not a conffile"
if command -v lintian >/dev/null 2>&1; then
    # Informative: a local package has no upstream license or changelog
    # format lintian would accept; errors are shown, not fatal.
    lintian --no-tag-display-limit "$deb" || true
else
    echo "(lintian not installed: skipped)"
fi

step "install"
dpkg -i "$deb"
getent passwd sluice >/dev/null || fail "no user sluice after install"
[ -d /run/sluice ] || fail "no /run/sluice after install"
/usr/sbin/sluice -c -f /etc/sluice/sluice.cfg || fail "installed config does not pass sluice -c"
/usr/sbin/sluice -vv | grep -q '^Git revision: ' || fail "sluice -vv has no Git revision"
# The installed config also passes as the service runs it: as user sluice.
if command -v runuser >/dev/null 2>&1; then
    runuser -u sluice -- /usr/sbin/sluice -c -q -f /etc/sluice/sluice.cfg \
        || fail "sluice -c fails as user sluice"
fi
if command -v systemd-analyze >/dev/null 2>&1; then
    systemd-analyze verify --man=no /lib/systemd/system/sluice.service \
        || fail "systemd-analyze verify sluice.service"
fi

step "run as the service does (user sluice), reload, soft stop"
# setpriv execs sluice itself, so $! is sluice's pid.
setpriv --reuid=sluice --regid=sluice --init-groups \
    /usr/sbin/sluice -f /etc/sluice/sluice.cfg >"$out/run.log" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -S /run/sluice/admin.sock ] && break; sleep 0.1; done
[ -S /run/sluice/admin.sock ] || { cat "$out/run.log"; fail "no stats socket in /run/sluice"; }
if command -v socat >/dev/null 2>&1; then
    echo "show info" | socat stdio /run/sluice/admin.sock | grep -q '^Name: sluice' \
        || fail "show info on /run/sluice/admin.sock"
fi
if command -v curl >/dev/null 2>&1; then
    curl -fsS http://127.0.0.1:8404/metrics | grep -q '^haproxy_process_nbthread ' \
        || fail "no metrics on 127.0.0.1:8404/metrics"
fi
kill -USR2 "$pid"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
[ "$status" -eq 0 ] || { cat "$out/run.log"; fail "sluice exited $status after SIGTERM"; }

step "reinstall (the upgrade path): the user and an edited conffile stay"
echo "# edited by test.sh" >>/etc/sluice/sluice.cfg
uid="$(id -u sluice)"
dpkg -i --force-confold "$deb" >/dev/null
[ "$(id -u sluice)" = "$uid" ] || fail "user sluice changed on reinstall"
grep -q '^# edited by test.sh$' /etc/sluice/sluice.cfg || fail "edited conffile replaced"
/usr/sbin/sluice -c -q -f /etc/sluice/sluice.cfg || fail "sluice -c after reinstall"

step "man pages"
for page in 1/sluice.1 5/sluice.cfg.5; do
    file="/usr/share/man/man${page%%/*}/${page#*/}.gz"
    [ -f "$file" ] || fail "$file not installed"
    warnings="$(zcat "$file" | groff -man -Tutf8 -ww -z 2>&1)"
    [ -z "$warnings" ] || fail "$file renders with warnings: $warnings"
    if command -v man >/dev/null 2>&1; then
        text="$(MANWIDTH=80 man -l "$file" 2>&1)"
        grep -q '^NAME' <<<"$text" || fail "man -l $file shows no NAME"
    fi
done

step "purge"
dpkg --purge sluice
trap 'rm -rf "$out"' EXIT
if dpkg-query -W -f='${Status}' sluice 2>/dev/null | grep -q 'installed'; then
    fail "still installed after purge"
fi
for p in /usr/sbin/sluice /etc/sluice /lib/systemd/system/sluice.service \
    /usr/lib/tmpfiles.d/sluice.conf /etc/rsyslog.d/49-sluice.conf /etc/logrotate.d/sluice \
    /usr/share/doc/sluice /usr/share/man/man1/sluice.1.gz /run/sluice /var/lib/sluice \
    /etc/systemd/system/multi-user.target.wants/sluice.service; do
    [ ! -e "$p" ] && [ ! -L "$p" ] || fail "$p left after purge"
done
getent passwd sluice >/dev/null && fail "user sluice left after purge"
getent group sluice >/dev/null && fail "group sluice left after purge"
ls /var/lib/systemd/deb-systemd-helper-enabled 2>/dev/null | grep -q sluice \
    && fail "deb-systemd-helper state left after purge"
echo "packaging/deb/test.sh: OK"
