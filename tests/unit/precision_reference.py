#!/usr/bin/env python3
"""Reference bf16 / fp16 roundings for test_precision, written independently
of runtime/cpu/precision.c: fp16 by Python's struct 'e' format (IEEE half,
round to nearest even), bf16 by exact rational arithmetic.  Prints lines
"F32BITS FP16BITS BF16BITS" (hex) for random fp32 values over every exponent
fp16 and bf16 care about, and for constructed ties."""
import random
import struct
from fractions import Fraction


def f32(bits):
    return struct.unpack('<f', struct.pack('<I', bits))[0]


def fp16_bits(x):
    try:
        return struct.unpack('<H', struct.pack('<e', x))[0]
    except OverflowError:  # beyond fp16: struct refuses what rounds to inf
        return 0xfc00 if x < 0 else 0x7c00


def bf16_bits(x):
    """Nearest bf16 (8 significant bits, fp32's exponent range), ties to even."""
    if x == 0:
        return 0x8000 if struct.pack('<f', x)[3] & 0x80 else 0
    sign = 0x8000 if x < 0 else 0
    v = abs(Fraction(x))
    e = v.numerator.bit_length() - v.denominator.bit_length()
    while Fraction(2) ** e > v:
        e -= 1
    while Fraction(2) ** (e + 1) <= v:
        e += 1
    e = max(e, -126)  # subnormals share the smallest exponent
    ulp = Fraction(2) ** (e - 7)
    q, r = divmod(v, ulp)
    q = int(q)
    if r > ulp / 2 or (r == ulp / 2 and q % 2 == 1):
        q += 1
    r32 = float(q * ulp)  # exactly representable in fp32 (or inf)
    if r32 >= 2.0 ** 128:
        return sign | 0x7f80
    b = struct.unpack('<I', struct.pack('<f', r32))[0] >> 16
    return sign | b


random.seed(20240520)
values = []
for _ in range(20000):
    exp = random.randint(127 - 30, 127 + 20)  # 2^-30 .. 2^20: fp16 subnormals to overflow
    values.append((random.getrandbits(1) << 31) | (exp << 23) | random.getrandbits(23))
for _ in range(2000):  # exact ties of both formats
    exp = random.randint(127 - 26, 127 + 16)
    mant = random.getrandbits(23)
    values.append((exp << 23) | (mant & ~0x1fff) | 0x1000)  # fp16 normal ties
    values.append((exp << 23) | (mant & ~0xffff) | 0x8000)  # bf16 ties
for bits in values:
    x = f32(bits)
    print('%08x %04x %04x' % (bits, fp16_bits(x), bf16_bits(x)))
