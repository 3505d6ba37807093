#!/bin/sh
# The same benchmark twice, one after the other on the idle machine: first on the disk as it is
# (this also makes the dataset template, outside the throttle), then throttled.
cd /work/w51io
THROTTLE=0 RUN=/work/w51io/wd/run-fast ./run.sh
THROTTLE=1 RUN=/work/w51io/wd/run-slow ./run.sh
