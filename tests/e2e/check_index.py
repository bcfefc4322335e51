#!/usr/bin/env python3
"""check_index.py DIR: the Hugging Face sharded sets of a pp > 1 checkpoint
(model, optimizer) are consistent, read independently of Weft's C reader:
every tensor of every shard is listed once in BASE.safetensors.index.json,
mapped to the shard that holds it; every listed tensor is in its shard; no
name is in two shards; metadata.total_size is the sum of the shards' tensor
bytes (data_offsets, headers not counted).  Exit 0, or 1 naming the problem."""
import json
import os
import struct
import sys


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    dup = {k for k in keys if keys.count(k) > 1}
    if dup:
        raise SystemExit("duplicate keys in JSON: %s" % sorted(dup))
    return dict(pairs)


def header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n), object_pairs_hook=no_duplicates)


def check(folder, base):
    with open(os.path.join(folder, base + ".safetensors.index.json")) as f:
        index = json.load(f, object_pairs_hook=no_duplicates)
    weight_map, total = index["weight_map"], index["metadata"]["total_size"]
    shards = sorted(set(weight_map.values()))
    want = ["%s-%05d-of-%05d.safetensors" % (base, i + 1, len(shards)) for i in range(len(shards))]
    if shards != want:
        return "%s: shards %s, Hugging Face names them %s" % (base, shards, want)
    seen, size = {}, 0
    for shard in shards:
        for name, t in header(os.path.join(folder, shard)).items():
            if name == "__metadata__":
                continue
            if name in seen:
                return "%s: tensor %s in %s and %s" % (base, name, seen[name], shard)
            seen[name] = shard
            if weight_map.get(name) != shard:
                return "%s: %s holds %s, the index maps it to %s" % (base, shard, name, weight_map.get(name))
            size += t["data_offsets"][1] - t["data_offsets"][0]
    missing = sorted(set(weight_map) - set(seen))
    if missing:
        return "%s: the index lists %s, in no shard" % (base, missing[:3])
    if size != total:
        return "%s: total_size %s, the shards hold %d bytes of tensors" % (base, total, size)
    print("%s: %d tensors in %d shards, %d bytes" % (base, len(seen), len(shards), size))
    return None


problems = [p for p in (check(sys.argv[1], b) for b in ("model", "optimizer")) if p]
for p in problems:
    print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
