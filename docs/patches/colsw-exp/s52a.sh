#!/bin/bash
# session 52 call A: colsw variants (bulk-copy stores, vector weight gather), checked, raced, timed
export PYTHONPATH=$PWD CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
python3 .exp/colsw/colsw_exp.py check q4gi,q4ss,q4bk,q4gv,q4bkgv 2>&1 | tee $OUT/check.txt | grep -v " ok$"
compute-sanitizer --tool=racecheck --error-exitcode=99 python3 .exp/colsw/colsw_exp.py race q4bk,q4gv,q4bkgv > $OUT/race.txt 2>&1; echo "racecheck rc $?"; tail -4 $OUT/race.txt
compute-sanitizer --tool=memcheck --error-exitcode=99 python3 .exp/colsw/colsw_exp.py race q4bk,q4gv,q4bkgv > $OUT/memcheck.txt 2>&1; echo "memcheck rc $?"; tail -3 $OUT/memcheck.txt
python3 .exp/colsw/colsw_exp.py time q4gi,q4ss,q4bk,q4gv,q4bkgv,q4d3,q4d1,q4gvd1 2>&1 | tee $OUT/time.txt
