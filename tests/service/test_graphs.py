"""CUDA-graph replay of the served forward (service/graphs.py) against the model run op by op."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import kernels
import models
from service.runtime import Runtime

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def runtime(spec: models.ModelSpec, shapes: int) -> Runtime:
    spec.module.to("cuda").eval()
    kernels.swap_conv_transpose2d(spec.module)
    return Runtime(spec, torch.device("cuda"), torch.float32, {}, [], {}, shapes)


def test_replayed_forwards_equal_op_by_op_ones():
    graphs, eager = runtime(models.load_model("dcgan"), 2), runtime(models.load_model("dcgan"), 0)
    try:
        gen = torch.Generator().manual_seed(0)
        # batch 1, a batch of three requests, batch 1 again (a replay), then a third shape past the limit
        for batch in ([1], [1, 1, 1], [1], [2, 3]):
            reqs = [[torch.randn(b, 100, 1, 1, generator=gen)] for b in batch]
            got, _ = graphs._forward(reqs)
            want, _ = eager._forward(reqs)
            for g, w in zip(got, want):
                assert torch.equal(g[0], w[0])
                assert torch.isfinite(g[0]).all() and g[0].abs().sum() > 0
        assert graphs.graphs.shapes == 2 and graphs.graphs.failed is None
        assert graphs.graphs.held_bytes == 4 * (1 + 3) * (100 + 3 * 64 * 64)  # inputs and outputs of batch 1 and 3
        assert eager.graphs.shapes == 0
    finally:
        graphs.close()
        eager.close()


class HostSync(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 2, 3, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = float(x.abs().max())  # a value read on the host: not capturable
        return self.up(x) * scale


def test_capture_stops_once_the_graphs_hold_their_memory_budget(monkeypatch):
    from service import graphs as graphs_module

    monkeypatch.setattr(graphs_module, "MAX_HELD_BYTES", 1)  # the first capture uses it up
    rt = runtime(models.load_model("dcgan"), 8)
    try:
        for b in (1, 2, 3):
            rt._forward([[torch.randn(b, 100, 1, 1)]])
        assert rt.graphs.shapes == 1
    finally:
        rt.close()


def test_a_model_that_syncs_with_the_host_runs_op_by_op():
    spec = models.ModelSpec.from_example(HostSync(), torch.randn(1, 4, 5, 5), name="hostsync")
    rt = runtime(spec, 8)
    try:
        x = torch.randn(2, 4, 5, 5)
        for _ in range(2):
            (got,), _ = rt._forward([[x]])
            with torch.inference_mode():
                want = spec.module(x.cuda()).cpu()
            assert torch.equal(got[0], want)
        assert rt.graphs.shapes == 0 and rt.graphs.failed
    finally:
        rt.close()
