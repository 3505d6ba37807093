#!/bin/sh
# The server binary in the same tree after the plugin: what a variant build with the plugin adds up to.
set -e
cd /work/w51rocks
date +%s > t3
make -C build -j2 mariadbd > make-server.log 2>&1
date +%s > t4
echo done
