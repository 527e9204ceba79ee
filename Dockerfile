# syntax=docker/dockerfile:1
# convt-serve for NVIDIA GPUs. The kernels are compiled here, when the image is
# built (no GPU needed), for sm_80, sm_86, sm_89 and sm_90 plus PTX that newer
# GPUs JIT-compile, into the directory the server loads them from: a container
# start compiles nothing, and the runtime image has no compiler at all.
#
#   docker build -t convt-serve:0.1.0 .
#   docker run --gpus all -p 8000:8000 convt-serve:0.1.0 --model dcgan
#
# Bases: NVIDIA's official CUDA 13.0.2 images on Ubuntu 24.04, with torch pinned
# from PyTorch's cu130 wheel index, rather than pytorch/pytorch:*-cuda13.0:
#  - the devel image's nvcc is the 13.0.2 toolkit (nvcc 13.0.88) that our CI
#    compiles the kernels with;
#  - torch 2.11.0+cu130 is the release our GPU tests and benchmarks ran on;
#  - the install is a plain virtual environment, the very steps that CI replays
#    in a fresh one (deploy/image/install.sh, deploy/image/replay.py);
#  - the runtime stage is the -base flavour (driver hooks and cudart only):
#    torch's wheels bring their own cuBLAS/cuDNN, so -runtime or -cudnn would
#    carry those libraries twice.
# sm_80..sm_90 and the PTX fallback; the server looks for kernels built for
# exactly this list, so both stages take it from here.
ARG CUDA_ARCHS="8.0;8.6;8.9;9.0+PTX"

FROM nvidia/cuda:13.0.2-devel-ubuntu24.04 AS build
ARG CUDA_ARCHS
ARG TORCH_VERSION=2.11.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cu130
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Not pinned: the base image's tag fixes the Ubuntu release, and apt archives
# drop superseded versions, so exact pins break rebuilds without making them safer.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends g++ python3 python3-dev python3-venv \
 && rm -rf /var/lib/apt/lists/*
ENV VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    CUDA_HOME=/usr/local/cuda \
    CONVT_BUILD_DIR=/opt/convt/kernels \
    TORCH_CUDA_ARCH_LIST=$CUDA_ARCHS
RUN python3 -m venv "$VIRTUAL_ENV"
WORKDIR /src
COPY deploy/image/install.sh deploy/image/install.sh
# torch in its own layer: source changes rebuild only what follows
RUN deploy/image/install.sh torch
COPY pyproject.toml README.md ./
COPY kernels kernels
COPY models models
COPY service service
RUN deploy/image/install.sh app .

FROM nvidia/cuda:13.0.2-base-ubuntu24.04 AS runtime
ARG CUDA_ARCHS
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# python3: the venv's interpreter (same Ubuntu release, same version as the
# build stage); libgomp1: the CPU kernel's OpenMP runtime.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 libgomp1 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --create-home --shell /usr/sbin/nologin convt
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/convt/kernels /opt/convt/kernels
# CONVT_HOST: the server's default is loopback, unreachable from outside a container.
ENV VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    CONVT_BUILD_DIR=/opt/convt/kernels \
    TORCH_CUDA_ARCH_LIST=$CUDA_ARCHS \
    CONVT_HOST=0.0.0.0 \
    CONVT_PORT=8000 \
    PYTHONUNBUFFERED=1
USER 10001:10001
WORKDIR /home/convt
EXPOSE 8000
# The model loads and passes its parity check before it is ready: allow for it.
HEALTHCHECK --interval=30s --timeout=10s --start-period=180s --retries=3 \
  CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/v2/health/ready' % os.environ.get('CONVT_PORT', '8000'), timeout=8)"]
ENTRYPOINT ["convt-serve"]
