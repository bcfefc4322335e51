#!/usr/bin/env python3
"""The table gelu_erf_values of test_kernels.c: gelu(x) = x Phi(x) and
gelu'(x) = Phi(x) + x phi(x) for a few fp32 values x, with Phi from the
Maclaurin series of erf summed in 80-digit decimal arithmetic, independent of
any libm (the kernels use libm's erfcf, the test's double reference libm's
erf).  Prints the C rows; rerun it to check or extend the table."""
from decimal import Decimal, getcontext

getcontext().prec = 80
PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899863")


def erf(z):
    """2 / sqrt(pi) * sum_n (-1)^n z^(2n+1) / (n! (2n+1)); here |z| <= 4.25,
    where no term exceeds e^(z^2) < 1e8: the cancellation costs 8 of the 80
    digits."""
    total, term, n = Decimal(0), z, 0
    while True:
        t = term / (2 * n + 1)
        total += t
        if abs(t) < Decimal(10) ** -70:
            return 2 / PI.sqrt() * total
        n += 1
        term = -term * z * z / n


XS = ["-6", "-5", "-4", "-3", "-2", "-1.5", "-1", "-0.5", "-0.125", "0",
      "0.25", "0.5", "1", "1.25", "2", "3", "4", "6"]

for s in XS:
    x = Decimal(s)
    cdf = (1 + erf(x / Decimal(2).sqrt())) / 2
    pdf = (-x * x / 2).exp() / (2 * PI).sqrt()
    c = s if "." not in s else s + "f"
    print("    {%s, %.17e, %.17e}," % (c, float(x * cdf), float(cdf + x * pdf)))
