#!/bin/bash
# session 53 call A: the tree's picks against their alternatives on the H200 for the problems under 50% of its floor
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -c "import torch; p=torch.cuda.get_device_properties(0); print(p); print({k: getattr(p,k) for k in dir(p) if not k.startswith('_')})"
G="python3 -m bench.gpu_time"
{ $G --cases kb71 --modes fp32,fp16 --algos auto,dwin,dwnp8,dwn8
  $G --cases kb75,kb81 --modes fp32,fp16 --algos auto,strip4,strip16,strip32,stripf | tail -n +3
  $G --cases kb69 --modes fp32 --algos auto,dwp4w,dwp4,dwp3 | tail -n +3
  $G --cases kb78 --modes fp32 --algos auto,dwn8 | tail -n +3
} 2>&1 | tee $OUT/gpu-time.txt
echo "times $((SECONDS - t0)) s"
bash bench/profile.sh kb75 2>&1 | tail -20
echo "all $((SECONDS - t0)) s"
