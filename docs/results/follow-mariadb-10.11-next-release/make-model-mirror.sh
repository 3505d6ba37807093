#!/bin/sh
# Makes a modelled MariaDB 1:10.11.19-0+deb12u1 source package (10.11.18 with make-next-release.py's
# edits, as an auto-committed quilt patch) and a signed local mirror (file://) that serves it with
# Debian's real 10.11.19 mariadb-server-core beside it, plus an APT_CONFIG naming only that mirror for
# bookworm-security and the real mirror for bookworm.
set -eu
N=/work/pw/next
cd $N
S=$HOME/.cache/pgoforge/apt/1afcfd40fc15d1ef
B=$HOME/.cache/pgoforge/apt/afe9c7c593474e06
opts() { echo "-o Dir::Etc::SourceList=$1/sources.list -o Dir::Etc::SourceParts=$1/parts -o Dir::State::Lists=$1/lists -o Dir::Cache=$1/cache -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=root"; }
mkdir -p dl && cd dl
[ -f mariadb_10.11.18-0+deb12u1.dsc ] || apt-get $(opts $S) source --download-only mariadb=1:10.11.18-0+deb12u1
[ -f mariadb-server-core_10.11.19-0+deb12u1_amd64.deb ] || { apt-get $(opts $B) download mariadb-server-core=1:10.11.19-0+deb12u1 && mv 'mariadb-server-core_1%3a10.11.19-0+deb12u1_amd64.deb' mariadb-server-core_10.11.19-0+deb12u1_amd64.deb; }
cd $N
rm -rf build && mkdir build && cd build
dpkg-source --no-check -x ../dl/mariadb_10.11.18-0+deb12u1.dsc mariadb-10.11.19
# Debian's 10.11.18 mariadbd (unpacked by the last run's distro stage) and its installed 10.11.19.
OLD=$(ls /work/pw/headline/pgoforge-work/distro/mariadb-server-core_*/root/usr/sbin/mariadbd)
python3 /work/main/docs/results/mariadb-10.11-stale-profile/make-next-release.py "$OLD" /usr/sbin/mariadbd mariadb-10.11.19 > $N/next-release.json
cd mariadb-10.11.19
# The release's own version, as a real release bumps it: the server then says 10.11.19, which the
# .deb's fit check demands (the first cycle, without this, was refused there: README).
sed -i 's/^MYSQL_VERSION_PATCH=18/MYSQL_VERSION_PATCH=19/' VERSION
{ printf 'mariadb (1:10.11.19-0+deb12u1) bookworm-security; urgency=medium\n\n  * Modelled next release (pgoforge follow measurement): 10.11.18 with\n    make-next-release.py edits.\n\n -- pgoforge model <model@pgoforge.invalid>  Mon, 07 Dec 2026 11:00:00 +0000\n\n'; cat debian/changelog; } > debian/changelog.new && mv debian/changelog.new debian/changelog
cd ..
for f in ../dl/mariadb_10.11.18.orig.tar.*; do case $f in *.asc) ;; *) cp "$f" "$(echo $f | sed 's,.*/,,; s/10.11.18/10.11.19/')";; esac; done
EDITOR=true dpkg-source --auto-commit -b mariadb-10.11.19 > $N/dpkg-source.log 2>&1
mkdir -p $N/mirror/pool/main/m/mariadb
cp mariadb_10.11.19* $N/mirror/pool/main/m/mariadb/
cp ../dl/mariadb-server-core_10.11.19-0+deb12u1_amd64.deb $N/mirror/pool/main/m/mariadb/
cd $N/mirror
mkdir -p dists/bookworm-security/main/source dists/bookworm-security/main/binary-amd64
apt-ftparchive sources pool > dists/bookworm-security/main/source/Sources
gzip -kf dists/bookworm-security/main/source/Sources
apt-ftparchive packages pool > dists/bookworm-security/main/binary-amd64/Packages
gzip -kf dists/bookworm-security/main/binary-amd64/Packages
apt-ftparchive -o APT::FTPArchive::Release::Suite=bookworm-security -o APT::FTPArchive::Release::Codename=bookworm-security -o APT::FTPArchive::Release::Components=main -o APT::FTPArchive::Release::Architectures="amd64 source" release dists/bookworm-security > $N/Release
mv $N/Release dists/bookworm-security/Release
export GNUPGHOME=$N/gnupg; mkdir -p -m 700 $GNUPGHOME
gpg --batch --list-secret-keys model@pgoforge.invalid >/dev/null 2>&1 || gpg --batch --passphrase '' --quick-gen-key model@pgoforge.invalid ed25519 sign never
gpg --batch --yes --clearsign -u model@pgoforge.invalid -o dists/bookworm-security/InRelease dists/bookworm-security/Release
gpg --batch --yes --export model@pgoforge.invalid > $N/model-key.gpg
mkdir -p $N/apt/parts
: > $N/apt/sources.list
cat > $N/apt/parts/model.sources <<EOT
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: file://$N/mirror
Suites: bookworm-security
Components: main
Signed-By: $N/model-key.gpg
EOT
cat > $N/apt.conf <<EOT
Dir::Etc::sourcelist "$N/apt/sources.list";
Dir::Etc::sourceparts "$N/apt/parts";
EOT
echo prepared
