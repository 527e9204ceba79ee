"""The codec on its own: every datatype through binary and JSON, body splitting,
and the size checks that run before any allocation."""

from __future__ import annotations

import json

import pytest
import torch

from service import codec
from service.errors import InvalidRequest
from service.protocol import RequestInput

SAMPLES = {
    "BOOL": torch.tensor([True, False, True]),
    "UINT8": torch.tensor([0, 7, 255], dtype=torch.uint8),
    "UINT16": torch.tensor([0, 7, 2**16 - 1], dtype=torch.uint16),
    "UINT32": torch.tensor([0, 7, 2**32 - 1], dtype=torch.uint32),
    "UINT64": torch.tensor([0, 7, 2**63 + 5], dtype=torch.uint64),
    "INT8": torch.tensor([-128, 0, 127], dtype=torch.int8),
    "INT16": torch.tensor([-32768, 1, 32767], dtype=torch.int16),
    "INT32": torch.tensor([-(2**31), 5, 2**31 - 1], dtype=torch.int32),
    "INT64": torch.tensor([-(2**63), 5, 2**63 - 1], dtype=torch.int64),
    "FP16": torch.tensor([-1.5, 0.0, 65504.0], dtype=torch.float16),
    "FP32": torch.tensor([-1.25, 3.0e-38, 1.0e38], dtype=torch.float32),
    "FP64": torch.tensor([-1.25, 1e-300, 1e300], dtype=torch.float64),
    "BF16": torch.tensor([-1.5, 0.0078125, 3.0e38], dtype=torch.bfloat16),
}


@pytest.mark.parametrize("datatype", sorted(SAMPLES))
def test_binary_round_trip(datatype):
    t = SAMPLES[datatype].reshape(1, 3)
    body, length = codec.encode_response({"model_name": "m"}, [("out", t, True)])
    header = json.loads(body[:length])
    (out,) = header["outputs"]
    assert out["datatype"] == datatype and out["shape"] == [1, 3]
    raw = memoryview(body)[length:]
    assert out["parameters"]["binary_data_size"] == len(raw) == 3 * codec.itemsize(datatype)
    back = codec.decode_input(RequestInput(name="x", shape=[1, 3], datatype=datatype), raw)
    assert back.dtype == t.dtype and torch.equal(back, t)


@pytest.mark.parametrize("datatype", sorted(SAMPLES))
def test_json_round_trip(datatype):
    t = SAMPLES[datatype].reshape(3, 1)
    body, length = codec.encode_response({"model_name": "m"}, [("out", t, False)])
    assert length is None
    out = json.loads(body)["outputs"][0]
    back = codec.decode_input(RequestInput(name="x", shape=out["shape"], datatype=datatype, data=out["data"]), None)
    assert back.dtype == t.dtype and torch.equal(back, t)


def test_little_endian_bytes():
    raw = memoryview(b"\x00\x00\x80\x3f\x00\x00\x00\xc0")  # 1.0f, -2.0f little-endian
    t = codec.decode_input(RequestInput(name="x", shape=[2], datatype="FP32"), raw)
    assert t.tolist() == [1.0, -2.0]


def test_split_body():
    head, tail = codec.split_body(b'{"a":1}xyz', "7")
    assert head == b'{"a":1}' and bytes(tail) == b"xyz"
    head, tail = codec.split_body(b'{"a":1}', None)
    assert head == b'{"a":1}' and len(tail) == 0
    for bad in ("-1", "8", "1.5", ""):
        with pytest.raises(InvalidRequest, match=codec.HEADER_LENGTH):
            codec.split_body(b'{"a":1}', bad)


def test_slice_binary_in_input_order():
    a = RequestInput(name="a", shape=[2], datatype="INT8", parameters={"binary_data_size": 2})
    j = RequestInput(name="j", shape=[1], datatype="INT8", data=[1])
    b = RequestInput(name="b", shape=[3], datatype="INT8", parameters={"binary_data_size": 3})
    chunks = codec.slice_binary([a, j, b], memoryview(b"\x01\x02\x03\x04\x05"))
    assert bytes(chunks["a"]) == b"\x01\x02" and bytes(chunks["b"]) == b"\x03\x04\x05" and "j" not in chunks
    with pytest.raises(InvalidRequest, match="runs past the end"):
        codec.slice_binary([a, b], memoryview(b"\x01\x02\x03"))
    with pytest.raises(InvalidRequest, match="1 bytes after the binary inputs"):
        codec.slice_binary([a], memoryview(b"\x01\x02\x03"))


def test_declared_size_is_checked_before_allocating():
    # a shape of 2**80 elements with 4 bytes sent: refused without touching memory
    inp = RequestInput(name="x", shape=[2**40, 2**40], datatype="FP32", parameters={"binary_data_size": 4})
    with pytest.raises(InvalidRequest, match="needs 1208925819614629174706176 x 4"):
        codec.decode_input(inp, memoryview(b"\x00" * 4))


def test_unknown_datatype_lists_the_known_ones():
    with pytest.raises(InvalidRequest, match="'FLOAT32' is not supported; expected one of"):
        codec.decode_input(RequestInput(name="x", shape=[1], datatype="FLOAT32", data=[1.0]), None)


@pytest.mark.parametrize("datatype,value", [("INT8", 128), ("UINT8", -1), ("INT32", 2**31), ("UINT64", 2**64)])
def test_integers_out_of_range_are_refused(datatype, value):
    with pytest.raises(InvalidRequest, match=f"outside the range of {datatype}|must be integers"):
        codec.decode_input(RequestInput(name="x", shape=[2], datatype=datatype, data=[1, value]), None)


def test_nan_and_inf_outputs_are_encoded():
    body, _ = codec.encode_response({}, [("o", torch.tensor([float("nan"), float("inf")]), False)])
    data = json.loads(body)["outputs"][0]["data"]
    assert data[0] != data[0] and data[1] == float("inf")


def test_wants_binary():
    req = codec.parse_request(json.dumps({
        "inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}],
        "parameters": {"binary_data_output": True},
        "outputs": [{"name": "a"}, {"name": "b", "parameters": {"binary_data": False}}],
    }).encode())
    assert codec.wants_binary(req) == (True, {"a": True, "b": False})


@pytest.mark.parametrize("datatype", sorted(SAMPLES))
def test_json_encoding_reads_back_as_the_tensors_values(datatype):
    # integers, bools and float64: exactly what json.dumps(t.tolist()) writes. float32/16 and bfloat16: the
    # shortest text of the float32 value (0.1, not 0.10000000149011612), which reads back to it as float32
    t = SAMPLES[datatype].reshape(3, 1)
    body, _ = codec.encode_response({"model_name": "m"}, [("out", t, False)])
    data = json.loads(body)["outputs"][0]["data"]
    if datatype in ("FP32", "FP16", "BF16"):
        assert all(type(v) is float for v in data)
        assert torch.equal(torch.tensor(data, dtype=torch.float64).float().to(t.dtype), t.reshape(-1))
    else:
        assert data == t.reshape(-1).tolist() == json.loads(json.dumps(t.reshape(-1).tolist()))
        assert [type(v) for v in data] == [type(v) for v in t.reshape(-1).tolist()]


def test_json_floats_round_trip_exactly():
    gen = torch.Generator().manual_seed(0)
    t = torch.randn(10_000, generator=gen, dtype=torch.float64) * torch.logspace(-300, 300, 10_000, dtype=torch.float64)
    body, _ = codec.encode_response({}, [("o", t, False)])
    assert torch.equal(torch.tensor(json.loads(body)["outputs"][0]["data"], dtype=torch.float64), t)


def test_binary_input_is_a_view_of_a_writable_body():
    body = bytearray(b"\x00" * 64 + b"\x00\x00\x80\x3f" * 4)
    raw = memoryview(body)[64:]
    t = codec.decode_input(RequestInput(name="x", shape=[4], datatype="FP32"), raw)
    assert t.tolist() == [1.0] * 4
    body[64:68] = b"\x00\x00\x00\x40"  # 2.0f: the tensor sees the body's memory, no copy was made
    assert t[0].item() == 2.0
    # a read-only body (bytes) is copied, and a misaligned start is copied to aligned memory
    assert codec.decode_input(RequestInput(name="x", shape=[1], datatype="FP32"), memoryview(b"\x00\x00\x80\x3f")).item() == 1.0
    odd = memoryview(bytearray(b"\x00" + b"\x00\x00\x80\x3f"))[1:]
    u = codec.decode_input(RequestInput(name="x", shape=[1], datatype="FP32"), odd)
    assert u.item() == 1.0 and u.data_ptr() % codec.MIN_ALIGN == 0


def test_response_heads_are_cached_only_when_short():
    t = torch.arange(6, dtype=torch.float32).reshape(1, 2, 3)
    fresh = codec._encode_head({"model_name": "m", "id": "a"}, [("out", t, True)], [codec._bytes_of(t)])
    codec._HEADS.clear()
    for _ in range(2):  # the second answer comes from the cache: the same bytes
        body, length = codec.encode_response({"model_name": "m", "id": "a"}, [("out", t, True)])
        assert body[:length] == fresh and bytes(body[length:]) == t.numpy().tobytes()
    assert len(codec._HEADS) == 1
    long_id = "x" * (codec.HEAD_MAX_BYTES + 1)  # a client's id may be as long as its body allows
    body, length = codec.encode_response({"model_name": "m", "id": long_id}, [("out", t, True)])
    assert json.loads(body[:length])["id"] == long_id and len(codec._HEADS) == 1


def test_bounded_cache_drops_the_oldest():
    from service.bounded import Bounded

    cache = Bounded(2)
    for k in "abc":
        cache.put(k, k.upper())
    assert list(cache.items()) == [("b", "B"), ("c", "C")]
