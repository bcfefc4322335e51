#!/usr/bin/env python3
"""Writes the safetensors fuzzer's seed corpus into the folder given: small
valid files (metadata, a scalar, 1-4 dimensions, an empty tensor, 8
dimensions) and a few that the reader must refuse.  Generated, not
committed: a few hundred bytes each."""
import json
import os
import struct
import sys


def st_file(tensors, meta=None, pad=True):
    """tensors: [(name, shape, floats)] laid out in order."""
    header, data = {}, b""
    if meta is not None:
        header["__metadata__"] = meta
    for name, shape, values in tensors:
        raw = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    if pad:
        text += b" " * (-(8 + len(text)) % 8)
    return struct.pack("<Q", len(text)) + text + data


def main(out):
    os.makedirs(out, exist_ok=True)
    seeds = {
        "two_tensors": st_file([("wte", [2, 3], [0.5 * i for i in range(6)]),
                                ("ln.b", [3], [1.0, 2.0, 3.0])],
                               {"step": "12", "seed": "1337", "plan_hash": "0123456789abcdef"}),
        "scalar": st_file([("loss_scale", [], [65536.0])], {"step": "1"}),
        "four_dims": st_file([("w", [1, 2, 1, 2], [1.0, -1.0, 2.0, -2.0])]),
        "empty": st_file([("none", [0, 4], [])]),
        "eight_dims": st_file([("w8", [1] * 8, [3.0])]),
        "no_tensors": st_file([], {"format": "pt"}),
        "truncated": st_file([("wte", [4], [1.0, 2.0, 3.0, 4.0])])[:-3],
        "bad_dtype": st_file([("x", [1], [1.0])]).replace(b"F32", b"F16"),
        "huge_header_len": struct.pack("<Q", 1 << 62) + b"{}",
    }
    for name, blob in seeds.items():
        with open(os.path.join(out, name + ".safetensors"), "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    main(sys.argv[1])
