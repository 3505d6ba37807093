#!/bin/sh
# The RocksDB plugin's build cost with the recipe's baseline configuration (clang 22), in a
# scratch build directory: configure, then the plugin target alone (ha_rocksdb.so and what it links).
set -e
cd /work/w51rocks
rm -rf build
date +%s > t0
cmake -S /work/w53/old/sources/mariadb-10.11.18-bf86fbf8c9cf -B build -G "Unix Makefiles" -DCMAKE_C_COMPILER=/usr/bin/clang-22 -DCMAKE_CXX_COMPILER=/usr/bin/clang++-22  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWITH_LIBFMT=system -DWITH_SSL=system -DWITH_ZLIB=system -DWITH_PCRE=system  -DWITH_UNIT_TESTS=OFF -DWITH_EMBEDDED_SERVER=OFF -DWITH_WSREP=OFF -DWITH_SYSTEMD=no -DPLUGIN_TOKUDB=NO  -DPLUGIN_ROCKSDB=DYNAMIC -DPLUGIN_MROONGA=NO -DPLUGIN_SPIDER=NO -DPLUGIN_CONNECT=NO -DPLUGIN_S3=NO  -DPLUGIN_COLUMNSTORE=NO -DPLUGIN_OQGRAPH=NO -DPLUGIN_SPHINX=NO -DPLUGIN_AUTH_GSSAPI=NO -DPLUGIN_AUTH_PAM=NO  -DPLUGIN_AUTH_PAM_V1=NO -DPLUGIN_HASHICORP_KEY_MANAGEMENT=NO -DPLUGIN_PROVIDER_BZIP2=NO -DPLUGIN_PROVIDER_LZ4=NO  -DPLUGIN_PROVIDER_LZMA=NO -DPLUGIN_PROVIDER_LZO=NO -DPLUGIN_PROVIDER_SNAPPY=NO -DCONNECT_WITH_MONGO=OFF > configure.log 2>&1
date +%s > t1
make -C build -j2 rocksdb > make.log 2>&1
date +%s > t2
echo done
