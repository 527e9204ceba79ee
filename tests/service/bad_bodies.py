"""Hand-made bad inference requests for the dcgan model (latent FP32 [-1, 100, 1, 1]).

Each is a case a client (or an attacker) can send: broken binary framing, sizes
that do not add up, shapes the codec must refuse before allocating anything,
JSON the parser must refuse without recursing, bytes that are not UTF-8.
Every one must be answered with its 4xx and an ``{"error": ...}`` body.

NaN and +-Infinity are NOT here: as values they are legal floats (a model may be
fed them through the binary extension anyway, and our responses write them as
Python's and Triton's JSON do), so a JSON request may carry the literals ``NaN``,
``Infinity`` and ``-Infinity``; test_bad_input.py checks they are served.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field

INFER = "/v2/models/dcgan/infer"
HCL = "Inference-Header-Content-Length"
SHAPE = [1, 100, 1, 1]
F32 = b"\x00\x00\x80\x3f" * 100  # one latent of 1.0f: the 400 bytes SHAPE needs
BIG = 1 << 20  # payload of the large cases: leaking them would show in the RSS test


@dataclass(frozen=True)
class Bad:
    id: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    status: int = 400
    path: str = INFER


def tensor(**over) -> dict:
    return {"name": "latent", "shape": SHAPE, "datatype": "FP32", "data": [0.5] * 100, **over}


def doc(*inputs, **extra) -> bytes:
    return json.dumps({"inputs": list(inputs) or [tensor()], **extra}).encode()


def binary(raw: bytes = F32, size=None, shape=SHAPE, header_length=None, datatype="FP32") -> tuple[bytes, dict]:
    """A binary-extension body whose parts can each be made wrong."""
    entry = {"name": "latent", "shape": shape, "datatype": datatype,
             "parameters": {"binary_data_size": len(raw) if size is None else size}}
    header = json.dumps({"inputs": [entry]}).encode()
    return header + raw, {HCL: str(len(header)) if header_length is None else str(header_length)}


def _bin(id: str, status: int = 400, **kw) -> Bad:
    body, headers = binary(**kw)
    return Bad(id, body, headers, status)


def _nested(depth: int, leaf: str = "0.5") -> bytes:
    return b"[" * depth + leaf.encode() + b"]" * depth


CORPUS: list[Bad] = [
    # binary framing: Inference-Header-Content-Length
    _bin("header-length-past-body", header_length=10**6),
    _bin("header-length-one-past-body", header_length=len(binary()[0]) + 1),
    _bin("header-length-negative", header_length=-1),
    _bin("header-length-not-a-number", header_length="ten"),
    _bin("header-length-float", header_length="57.5"),
    _bin("header-length-empty", header_length=""),
    _bin("header-length-enormous", header_length=10**40),
    _bin("header-length-zero", header_length=0),
    _bin("header-length-cuts-json", header_length=30),
    _bin("header-length-swallows-binary", header_length=len(binary()[0]) - 200),
    # binary sizes that do not add up
    _bin("binary-size-past-body", raw=F32[:40], size=400),
    _bin("binary-bytes-left-over", raw=F32 + b"\0" * 8, size=400),
    _bin("binary-size-negative", size=-400),
    _bin("binary-size-float", size=400.0),
    _bin("binary-size-string", size="400"),
    _bin("binary-size-bool", size=True),
    _bin("binary-size-enormous", size=10**20),
    _bin("binary-wrong-byte-count", raw=F32[:-4]),
    _bin("binary-truncated-body", raw=F32[:200], size=400),
    _bin("binary-odd-byte-count", raw=F32 + b"\0\0", size=402),
    _bin("binary-large-wrong-byte-count", raw=b"\0" * BIG),
    Bad("binary-size-on-json-input", doc({**tensor(data=None), "parameters": {"binary_data_size": 400}})),
    Bad("binary-size-and-data", doc(tensor(parameters={"binary_data_size": 400}))),
    Bad("binary-header-without-length-header", binary()[0]),
    Bad("binary-input-without-bytes", doc({k: v for k, v in tensor().items() if k != "data"}),
        {HCL: str(len(doc({k: v for k, v in tensor().items() if k != "data"})))}),
    # shapes: refused on the declared shape, before anything of that size exists
    _bin("shape-negative", shape=[-1, 100, 1, 1]),
    _bin("shape-enormous", shape=[2**40, 100, 1, 1]),
    _bin("shape-past-int64", shape=[10**30, 100, 1, 1]),
    _bin("shape-product-past-int64", shape=[2**40, 100, 2**40, 2**40]),
    Bad("shape-enormous-json", doc(tensor(shape=[2**62, 100, 1, 1]))),
    Bad("shape-zero-batch", doc(tensor(shape=[0, 100, 1, 1], data=[]))),
    Bad("shape-zero-channel", doc(tensor(shape=[1, 0, 1, 1], data=[]))),
    Bad("shape-zero-binary", *binary(raw=b"", shape=[0, 100, 1, 1])),
    Bad("shape-scalar", doc(tensor(shape=[], data=[0.5]))),
    Bad("shape-rank-1000", doc(tensor(shape=[1] * 1000, data=[0.5]))),
    Bad("shape-floats", doc(tensor(shape=[1.0, 100.0, 1.0, 1.0]))),
    Bad("shape-bools", doc(tensor(shape=[True, 100, 1, 1]))),
    Bad("shape-string", doc(tensor(shape="1,100,1,1"))),
    Bad("shape-null", doc(tensor(shape=None))),
    # JSON data
    Bad("data-nested-100000-deep", b'{"inputs": [{"name": "latent", "shape": [1, 100, 1, 1], "datatype": "FP32", '
                                   b'"data": ' + _nested(100_000) + b"}]}"),
    Bad("data-nested-150-deep", b'{"inputs": [{"name": "latent", "shape": [1, 100, 1, 1], "datatype": "FP32", '
                                b'"data": ' + _nested(150) + b"}]}"),
    Bad("parameters-nested-100000-deep", b'{"parameters": {"x": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_000 +
        b'}, "inputs": [' + json.dumps(tensor()).encode() + b"]}"),
    Bad("data-nulls", doc(tensor(data=[None] * 100))),
    Bad("data-objects", doc(tensor(data=[{}] * 100))),
    Bad("data-strings", doc(tensor(data=["0.5"] * 100))),
    Bad("data-string", doc(tensor(data="0.5" * 100))),
    Bad("data-ints-past-any-dtype", doc(tensor(data=[10**400] * 100))),
    Bad("data-ragged", doc(tensor(data=[[0.5] * 50, [0.5] * 49 + [[0.5]]]))),
    Bad("data-too-few", doc(tensor(data=[0.5] * 99))),
    Bad("data-large-too-many", doc(tensor(data=[0.5] * (BIG // 5)))),
    Bad("data-nan-string", doc(tensor(data=["NaN"] * 100))),
    # encodings
    Bad("non-utf8-name", doc(tensor(name="LATENT")).replace(b"LATENT", b"lat\xff\xfeent")),
    Bad("utf16-body", doc().decode().encode("utf-16")),
    Bad("lone-surrogate-name", doc(tensor(name="\ud800"))),
    Bad("lone-surrogate-datatype", doc(tensor(datatype="\udfff"))),
    Bad("nul-bytes", b"\0" * 1000),
    Bad("empty-body", b""),
    Bad("json-null", b"null"),
    Bad("json-number", b"1e999"),
    Bad("json-string", b'"inputs"'),
    Bad("trailing-garbage", doc() + b"}{"),
    Bad("gzip-of-garbage", gzip.compress(b"\xff" * 1000), {"Content-Encoding": "gzip"}),
    Bad("gzip-body-not-compressed", doc(), {"Content-Encoding": "gzip"}),
    # content types that do not match the body (the body's format is read from
    # Inference-Header-Content-Length, as the protocol says, not from Content-Type)
    Bad("multipart-form", b'--x\r\nContent-Disposition: form-data; name="inputs"\r\n\r\n[]\r\n--x--\r\n',
        {"Content-Type": "multipart/form-data; boundary=x"}),
    Bad("urlencoded-form", b"inputs=latent&shape=1,100,1,1", {"Content-Type": "application/x-www-form-urlencoded"}),
    Bad("json-type-binary-body", binary()[0], {"Content-Type": "application/json"}),
    Bad("text-plain-garbage", b"hello, model", {"Content-Type": "text/plain; charset=latin-1"}),
    # request structure
    Bad("duplicate-inputs", doc(tensor(), tensor())),
    Bad("duplicate-json-key-inputs", doc()[:-1] + b', "inputs": []}'),
    Bad("inputs-object", b'{"inputs": {"latent": [0.5]}}'),
    Bad("inputs-empty", b'{"inputs": []}'),
    Bad("input-unknown", doc(tensor(name="z"))),
    Bad("datatype-fp64", doc(tensor(datatype="FP64"))),
    Bad("datatype-lowercase", doc(tensor(datatype="fp32"))),
    Bad("datatype-bytes", doc(tensor(datatype="BYTES", data=["a"] * 100))),
    Bad("datatype-number", doc(tensor(datatype=32))),
    Bad("datatype-binary-fp16", *binary(raw=b"\0" * 200, datatype="FP16")),
    Bad("output-unknown", doc(outputs=[{"name": "mask"}])),
    Bad("output-twice", doc(outputs=[{"name": "image"}, {"name": "image"}])),
    Bad("outputs-not-a-list", doc(outputs={"name": "image"})),
    Bad("id-number", doc(id=7)),
    Bad("parameters-list", doc(parameters=[1, 2])),
    # names outside what the server serves, sent as a percent-escaped path
    Bad("model-name-not-utf8", doc(), path="/v2/models/%ff%fe/infer", status=404),
    Bad("model-name-surrogate", doc(), path="/v2/models/%ed%a0%80/infer", status=404),
    Bad("version-not-utf8", doc(), path="/v2/models/dcgan/versions/%ff/infer", status=404),
]
