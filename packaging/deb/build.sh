#!/usr/bin/env bash
# Builds the Debian package of sluice from this repository, with nothing but
# cargo and dpkg-deb (no network-only tools, no debhelper):
#
#   packaging/deb/build.sh [<output dir>]     # default: target/debian
#
# It runs `cargo build --release` (the one costly step: a few minutes from
# scratch on 2 cores, seconds when the release build is current; it honours
# CARGO_TARGET_DIR), stages the files below in a temporary root and builds
# <output dir>/sluice_<version>_<arch>.deb with `dpkg-deb --build
# --root-owner-group`. It prints the package's path on its last line.
#
#   /usr/sbin/sluice                          the binary (stripped)
#   /etc/sluice/sluice.cfg                    conffile: packaging/etc/sluice.cfg
#   /etc/rsyslog.d/49-sluice.conf             conffile: packaging/rsyslog/
#   /etc/logrotate.d/sluice                   conffile: packaging/logrotate/
#   /lib/systemd/system/sluice.service        packaging/systemd/sluice.service
#   /usr/lib/tmpfiles.d/sluice.conf           packaging/tmpfiles/sluice.conf
#   /usr/share/man/man1/sluice.1.gz           packaging/man/ (generated pages,
#   /usr/share/man/man5/sluice.cfg.5.gz         kept current by tests/man_pages.rs)
#   /usr/share/doc/sluice/                    copyright, changelog.gz, README.md,
#                                             configuration.md, examples/
#   /var/lib/sluice/dev                       for rsyslog's socket when chrooted
#
# Maintainer scripts (packaging/deb/{postinst,prerm,postrm}) create the
# system user sluice, follow Debian's systemd practice through
# deb-systemd-helper when it is installed, and remove everything on purge.
#
# Versions: the package's is Cargo.toml's (a native package); SOURCE_DATE_EPOCH
# (default: the last commit's date) dates the changelog and the files.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/target/debian}"
cd "$root"

version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
arch="$(dpkg --print-architecture)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"

cargo build --release --locked --bin sluice
bin="$target_dir/release/sluice"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
pkg="$stage/sluice"
doc="$pkg/usr/share/doc/sluice"
install -d "$pkg/DEBIAN" "$doc/examples" "$pkg/var/lib/sluice/dev" \
    "$pkg/usr/share/man/man1" "$pkg/usr/share/man/man5"

install -D -m 0755 "$bin" "$pkg/usr/sbin/sluice"
strip --strip-unneeded "$pkg/usr/sbin/sluice" 2>/dev/null || true
install -D -m 0644 packaging/etc/sluice.cfg "$pkg/etc/sluice/sluice.cfg"
install -D -m 0644 packaging/rsyslog/49-sluice.conf "$pkg/etc/rsyslog.d/49-sluice.conf"
install -D -m 0644 packaging/logrotate/sluice "$pkg/etc/logrotate.d/sluice"
install -D -m 0644 packaging/systemd/sluice.service "$pkg/lib/systemd/system/sluice.service"
install -D -m 0644 packaging/tmpfiles/sluice.conf "$pkg/usr/lib/tmpfiles.d/sluice.conf"
gzip -9n <packaging/man/sluice.1 >"$pkg/usr/share/man/man1/sluice.1.gz"
gzip -9n <packaging/man/sluice.cfg.5 >"$pkg/usr/share/man/man5/sluice.cfg.5.gz"
install -m 0644 README.md docs/configuration.md "$doc/"
install -m 0644 conf/*.cfg packaging/systemd/sluice.socket \
    packaging/systemd/sluice-activated.service "$doc/examples/"
install -m 0644 "$here/copyright" "$doc/copyright"

# A Debian changelog: this version, built from this revision, with the
# commits since the previous tag (or the last 50).
{
    rev="$(git describe --tags --always 2>/dev/null || echo "unknown revision")"
    printf 'sluice (%s) unstable; urgency=medium\n\n' "$version"
    printf '  * Built from %s.\n' "$rev"
    git log --no-merges -n 50 --format='  * %h %s' 2>/dev/null | cut -c1-200 || true
    printf '\n -- sluice developers <sluice@localhost>  %s\n' \
        "$(date -R -u -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$doc/changelog.gz"

# Dependencies: the shared libraries the binary needs, mapped to their
# packages; an unknown one stops the build (add it here).
depends="adduser"
libc_min="$(readelf --version-info --wide "$bin" | grep -o 'GLIBC_[0-9.]*' \
    | sed 's/GLIBC_//' | sort -V | tail -n1)"
for lib in $(readelf -d "$bin" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
    case "$lib" in
        libc.so.6|libm.so.6|libpthread.so.0|libdl.so.2|librt.so.1|ld-linux*)
            dep="libc6 (>= ${libc_min:-2.31})" ;;
        libgcc_s.so.1) dep="libgcc-s1" ;;
        *) echo "build.sh: no package known for $lib" >&2; exit 1 ;;
    esac
    case ", $depends, " in *", $dep, "*) ;; *) depends="$dep, $depends" ;; esac
done

for script in postinst prerm postrm; do
    install -m 0755 "$here/$script" "$pkg/DEBIAN/$script"
done
printf '%s\n' /etc/sluice/sluice.cfg /etc/rsyslog.d/49-sluice.conf \
    /etc/logrotate.d/sluice >"$pkg/DEBIAN/conffiles"
installed_size="$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)"
cat >"$pkg/DEBIAN/control" <<CONTROL
Package: sluice
Version: $version
Architecture: $arch
Maintainer: sluice developers <sluice@localhost>
Installed-Size: $installed_size
Depends: $depends
Recommends: rsyslog | system-log-daemon, logrotate
Suggests: socat
Section: net
Priority: optional
Description: reverse proxy and load balancer that speaks HAProxy's language
 sluice is an HTTP/1.1 and TCP reverse proxy and load balancer that reads
 HAProxy 2.6 configuration files and answers as HAProxy does: the same
 stats socket commands and CSV, the same log lines and error pages, the
 same signals for reloads and soft stops. It adds split configuration
 directories and reloads that keep counters, health states and queues.
 .
 This package runs it as a systemd service (sluice.service) under the
 system user sluice, with logs through rsyslog.
CONTROL

# Reproducible: every file dated SOURCE_DATE_EPOCH.
find "$pkg" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
mkdir -p "$out"
deb="$out/sluice_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
echo "$deb"
