#!/bin/sh
# usage: unshare --mount --pid --fork --propagation private tests/fixtures/deploy/isolated-root.sh DIR \
#          tools/deb-real-build-check.sh DIR/out.txt PACKAGE.deb DEBIAN_VERSION   (as root; DIR holds the .deb)
# The .deb of a real PGO+LTO build on Debian's own MariaDB of the version it was built from,
# inside isolated-root.sh: Debian's server (downgraded in the overlay to that version if need be)
# started by its init script, data written, the .deb installed, Debian's plugins loaded into the
# optimized server, the .deb removed. Observations as key=value in OUT.
set -u
out=$1 deb=$2 v=$3
say() { echo "$1=$2" >> "$out"; }
q() { mariadb -NBe "$1" 2>>"$out.log"; }
printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d
pk=""; for p in mariadb-server mariadb-server-core mariadb-client mariadb-client-core mariadb-common libmariadb3; do pk="$pk $p=$v"; done
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-downgrades --no-install-recommends $pk >> "$out.log" 2>&1; say apt_exit $?
say core_version "$(dpkg-query -W -f '${Version}' mariadb-server-core)"
rm -f /usr/sbin/policy-rc.d /sbin/runlevel; printf '#!/bin/sh\necho N 2\n' > /sbin/runlevel; chmod 755 /sbin/runlevel
invoke-rc.d mariadb start >> "$out.log" 2>&1
q "CREATE DATABASE deploy"; q "CREATE TABLE deploy.t (id INT PRIMARY KEY, v CHAR(32)) ENGINE=InnoDB"
q "INSERT INTO deploy.t SELECT seq, MD5(seq) FROM deploy.seq_1_to_5000"
say before_version "$(q 'SELECT VERSION()')"; say before_checksum "$(q 'CHECKSUM TABLE deploy.t' | cut -f2)"
dpkg -i "$deb" >> "$out.log" 2>&1; say dpkg_exit $?
say installed_version "$(q 'SELECT VERSION()')"; say installed_checksum "$(q 'CHECKSUM TABLE deploy.t' | cut -f2)"
say installed_exe "$(readlink /proc/$(cat /run/mysqld/mysqld.pid)/exe)"
for so in ha_archive ha_blackhole ha_federatedx metadata_lock_info query_response_time server_audit disks locales simple_password_check sql_errlog type_mysql_json auth_ed25519 file_key_management; do
  q "INSTALL SONAME '$so'" && say "plugin_$so" loaded || say "plugin_$so" FAILED
done
q "CREATE TABLE deploy.a (i INT) ENGINE=ARCHIVE"; q "INSERT INTO deploy.a VALUES (1),(2),(3)"; say archive_rows "$(q 'SELECT COUNT(*) FROM deploy.a')"
q "CREATE TABLE deploy.b (i INT) ENGINE=BLACKHOLE"; q "INSERT INTO deploy.b VALUES (1)"; say blackhole_rows "$(q 'SELECT COUNT(*) FROM deploy.b')"
say plugins_active "$(q "SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_LIBRARY IS NOT NULL AND PLUGIN_STATUS='ACTIVE'")"
q "SELECT * FROM information_schema.METADATA_LOCK_INFO" >/dev/null && say is_metadata_lock_info ok
q "SELECT COUNT(*) FROM information_schema.QUERY_RESPONSE_TIME" >/dev/null && say is_query_response_time ok
dpkg -r mariadb-server-pgo >> "$out.log" 2>&1; say remove_exit $?
say removed_version "$(q 'SELECT VERSION()')"; say removed_checksum "$(q 'CHECKSUM TABLE deploy.t' | cut -f2)"
invoke-rc.d mariadb stop >> "$out.log" 2>&1
say done yes
