"""The module, the in-place swap, compile/export, and the parity report."""

import copy
import json

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import kernels
from kernels import ConvTranspose2d, check_parity, swap_conv_transpose2d


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(8, 8, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.norm = nn.BatchNorm2d(8)

    def forward(self, x):
        return torch.relu(self.norm(self.up(x)))


class Decoder(nn.Module):
    """ConvTranspose2d at several depths and in every container kind."""

    def __init__(self):
        super().__init__()
        self.stem = nn.ConvTranspose2d(4, 8, (3, 5), stride=(1, 2), padding=(1, 2), output_padding=(0, 1), bias=False)
        self.seq = nn.Sequential(Block(), nn.Sequential(nn.ConvTranspose2d(8, 8, 4, 2, 1, dilation=1)))
        self.lst = nn.ModuleList([nn.ConvTranspose2d(8, 6, 3, padding=1, dilation=2, output_padding=1, stride=2)])
        self.dct = nn.ModuleDict({"head": nn.ConvTranspose2d(6, 3, 1)})

    def forward(self, x):
        x = self.stem(x)
        x = self.seq(x)
        x = self.lst[0](x)
        return torch.tanh(self.dct["head"](x))


def fresh_model():
    torch.manual_seed(0)
    m = Decoder().eval()
    for bn in m.modules():  # non-trivial running statistics
        if isinstance(bn, nn.BatchNorm2d):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 1.5)
    return m


def test_swap_replaces_every_layer_keeps_state_and_outputs():
    ref = fresh_model()
    model = copy.deepcopy(ref)
    keys_before = list(model.state_dict())
    records = swap_conv_transpose2d(model)
    assert [r["name"] for r in records] == ["stem", "seq.0.up", "seq.1.0", "lst.0", "dct.head"]
    assert not any(type(m) is nn.ConvTranspose2d for m in model.modules())
    assert records[0]["kernel_size"] == [3, 5] and records[0]["bias"] is False
    assert list(model.state_dict()) == keys_before
    for k, v in ref.state_dict().items():
        assert torch.equal(model.state_dict()[k], v)
    x = torch.randn(2, 4, 5, 6)
    with torch.no_grad():
        torch.testing.assert_close(model(x), ref(x), rtol=1e-5, atol=1e-5)
    json.dumps(records)


def test_swap_is_idempotent_and_shares_parameters():
    model = fresh_model()
    w = model.seq[0].up.weight
    first = swap_conv_transpose2d(model)
    second = swap_conv_transpose2d(model)
    assert first == second
    assert model.seq[0].up.weight is w  # shared, not copied
    assert isinstance(model.seq[0].up, ConvTranspose2d)


def test_swap_root_module_and_shared_submodule():
    root = nn.ConvTranspose2d(3, 2, 3)
    assert [r["name"] for r in swap_conv_transpose2d(root)] == [""]
    assert isinstance(root, ConvTranspose2d)
    shared = nn.ConvTranspose2d(2, 2, 3, padding=1)
    seq = nn.Sequential(shared, nn.ReLU(), shared)
    swap_conv_transpose2d(seq)
    assert seq[0] is seq[2] and isinstance(seq[0], ConvTranspose2d)


def test_from_module_shares_parameters_without_copy():
    m = nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2)
    ours = ConvTranspose2d.from_module(m)
    assert ours.weight is m.weight and ours.bias is m.bias
    assert ours.weight.data_ptr() == m.weight.data_ptr()
    x = torch.randn(1, 4, 7, 7)
    torch.testing.assert_close(ours(x), m(x), rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError):
        ConvTranspose2d.from_module(nn.Conv2d(1, 1, 1))


def test_module_constructor_state_dict_and_output_size():
    torch.manual_seed(1)
    ours = ConvTranspose2d(4, 6, 3, stride=2, padding=1)
    theirs = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(2, 4, 5, 5)
    for size in (None, [10, 10], [9, 10], (2, 6, 10, 9)):
        torch.testing.assert_close(ours(x, output_size=size), theirs(x, output_size=size), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        ours(x, output_size=[20, 20])
    torch.testing.assert_close(ours(x[0]), theirs(x[0]), rtol=1e-5, atol=1e-5)  # unbatched


def test_backward_matches_torch():
    torch.manual_seed(2)
    m = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2).double()
    ours = ConvTranspose2d.from_module(copy.deepcopy(m))
    x1 = torch.randn(2, 4, 5, 5, dtype=torch.float64, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_()
    g = torch.randn(2, 6, 10, 10, dtype=torch.float64)
    m(x1).backward(g)
    ours(x2).backward(g)
    torch.testing.assert_close(x2.grad, x1.grad)
    torch.testing.assert_close(ours.weight.grad, m.weight.grad)
    torch.testing.assert_close(ours.bias.grad, m.bias.grad)


@pytest.mark.parametrize("unbatched,bias,grads", [(False, True, (True, True, True)), (True, True, (True, False, True)),
                                                  (False, False, (False, True, False)), (True, False, (True, True, False))])
def test_backward_gradcheck(unbatched, bias, grads):
    # the op's C++ autograd: every input that requires grad, and only those, against finite differences
    torch.manual_seed(3)
    x = torch.randn(*(() if unbatched else (2,)), 4, 4, 5, dtype=torch.float64, requires_grad=grads[0])
    w = torch.randn(4, 3, 3, 2, dtype=torch.float64, requires_grad=grads[1])
    b = torch.randn(6, dtype=torch.float64, requires_grad=grads[2]) if bias else None
    fn = lambda x, w, b: kernels.conv_transpose2d(x, w, b, (2, 1), (1, 0), (1, 0), 2, (1, 2))  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x, w, b))
    out = fn(x, w, b)
    out.sum().backward()
    assert (x.grad is not None) == grads[0] and (w.grad is not None) == grads[1]
    if bias:
        assert (b.grad is not None) == grads[2]


def test_no_graph_where_nothing_needs_grad():
    # the autograd kernel's shortcut: no node where nothing requires grad or grad mode is off, a node otherwise
    torch.manual_seed(4)
    x, w, b = torch.randn(2, 4, 4, 5), torch.randn(4, 3, 3, 2), torch.randn(6)
    fn = lambda x, w, b: kernels.conv_transpose2d(x, w, b, 2, 1, 1, 2)  # noqa: E731
    ref = F.conv_transpose2d(x, w, b, 2, 1, 1, 2)
    out = fn(x, w, b)
    assert out.grad_fn is None and not out.requires_grad
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    with torch.no_grad():
        assert fn(x, w.requires_grad_(), b).grad_fn is None
    out = fn(x, w, b.requires_grad_())
    assert out.requires_grad and out.grad_fn is not None
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_forward_ad_is_refused_not_dropped():
    # no jvp: a dual operand must raise, not come back as a plain output with its tangent lost
    import torch.autograd.forward_ad as fwAD

    x, w = torch.randn(1, 4, 3, 3), torch.randn(4, 2, 3, 3)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError):
            kernels.conv_transpose2d(fwAD.make_dual(x, torch.randn_like(x)), w)


def test_compile_fullgraph_runs_our_op():
    model = fresh_model()
    swap_conv_transpose2d(model)
    compiled = torch.compile(model, fullgraph=True)
    x = torch.randn(2, 4, 5, 6)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)


def test_export_keeps_our_op_in_the_graph():
    model = fresh_model()
    swap_conv_transpose2d(model)
    x = torch.randn(2, 4, 5, 6)
    ep = torch.export.export(model, (x,))
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert any("convt.conv_transpose2d" in t for t in targets), targets
    torch.testing.assert_close(ep.module()(x), model(x), rtol=1e-5, atol=1e-5)


def test_check_parity_report():
    model = fresh_model()
    swap_conv_transpose2d(model)
    model.train()
    stats = model.seq[0].norm.running_mean.clone()
    report = check_parity(model, torch.randn(2, 4, 5, 6))
    assert model.training and torch.equal(model.seq[0].norm.running_mean, stats)
    json.dumps(report)
    assert report["passed"] is True
    assert report["precision"] == "float32" and report["device"] == "cpu"
    names = [r["name"] for r in report["layers"]]
    assert names == ["stem", "seq.0.up", "seq.1.0", "lst.0", "dct.head"]
    for r in report["layers"]:
        assert r["input_source"] == "example"
        assert 0 <= r["rel_error"] <= r["tolerance"] == 1e-5
        assert set(r) >= {"name", "config", "max_abs_error", "rel_error", "tolerance", "passed", "seconds"}
    assert report["layers"][1]["input_shape"] == [2, 8, 5, 12]
    assert report["model"]["passed"] and report["model"]["rel_error"] < 1e-5


def test_check_parity_catches_a_wrong_layer():
    model = fresh_model()
    swap_conv_transpose2d(model)

    class Wrong(ConvTranspose2d):
        def forward(self, x, output_size=None):
            return super().forward(x, output_size) * 1.001

    model.lst[0].__class__ = Wrong
    report = check_parity(model, torch.randn(1, 4, 5, 6))
    verdicts = {r["name"]: r["passed"] for r in report["layers"]}
    assert verdicts["lst.0"] is False and verdicts["stem"] is True
    assert report["model"]["passed"] is False and report["passed"] is False


def test_build_info():
    info = kernels.build_info()
    assert "cpu" in info["backends"]
    assert info["torch"] == torch.__version__
    assert info["build_dir"]
    json.dumps(info)
