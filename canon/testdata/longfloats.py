#!/usr/bin/env python3
"""Writes longfloats.json: float tokens past strconv's exact range and the
float64 that Python's float() reads from each (as float.hex(), or "inf"
when it overflows, which the protocol refuses).

A token is prefix + "0" * zeros + suffix. Run from this directory:
    python3 longfloats.py > longfloats.json
"""
import json
from fractions import Fraction


def exact(x):
    """The exact decimal expansion of a binary fraction, as digits and exponent."""
    f = Fraction(x)
    k = 0
    while f.denominator != 1:
        f *= 10
        k += 1
    return str(f.numerator), -k


def dec(num, exp):
    return f"{num}e{exp}"


# Points halfway between neighbouring float64s, exactly.
max_half_num, max_half_exp = exact(Fraction(2**1024 - 2**970))
min_half_num, min_half_exp = exact(Fraction(1, 2**1075))
sub_half_num, sub_half_exp = exact(Fraction(2 * 1234567 + 1, 2**1075))
norm_half_num, norm_half_exp = exact(Fraction(2 * (2**52 + 12345) + 1, 2**(1000 + 53)))

cases = [
    # The three values of the report.
    ("1, 801 zeros, e-801", "1", 801, "e-801"),
    ("2^53+1, 5000 zeros, 1e-5001", "9007199254740993", 5000, "1e-5001"),
    ("1000 nines e-500", "9" * 1000, 0, "e-500"),
    # Around strconv's 800 digits.
    ("1, 799 zeros, e-799", "1", 799, "e-799"),
    ("1, 800 zeros, e-800", "1", 800, "e-800"),
    ("1, 800 zeros, 1e-801", "1", 800, "1e-801"),
    ("0., 900 zeros, 1e900", "0.", 900, "1e900"),
    ("point after 900 digits", "1", 899, ".5e-899"),
    # Ties between two float64s, broken or not by a far digit.
    ("2^53+1 tie, even down", "9007199254740993.", 1000, ""),
    ("2^53+1 tie, 1 after 1000 zeros", "9007199254740993.", 1000, "1"),
    ("2^53+3 tie, even up", "9007199254740995.", 1000, ""),
    ("just below 2^53+1", "9007199254740992." + "9" * 1200, 0, ""),
    ("halfway near 2^-1000", norm_half_num, 0, f"e{norm_half_exp}"),
    ("halfway near 2^-1000, 1 after 500 zeros", norm_half_num, 500, f"1e{norm_half_exp - 501}"),
    ("halfway near 2^-1000 less 1 in the 1300th digit",
     str(int(norm_half_num) * 10**(1300 - len(norm_half_num)) - 1), 0, f"e{norm_half_exp - (1300 - len(norm_half_num))}"),
    ("halfway past the largest float64", max_half_num, 0, f"e{max_half_exp}"),
    ("just below halfway past the largest float64",
     str(int(max_half_num) * 10**1000 - 1), 0, f"e{max_half_exp - 1000}"),
    ("halfway to the smallest subnormal", min_half_num, 0, f"e{min_half_exp}"),
    ("just above halfway to the smallest subnormal", min_half_num, 900, f"1e{min_half_exp - 901}"),
    ("halfway between two subnormals", sub_half_num, 0, f"e{sub_half_exp}"),
    ("just above halfway between two subnormals", sub_half_num, 1000, f"1e{sub_half_exp - 1001}"),
    ("just below halfway between two subnormals",
     str(int(sub_half_num) * 10**100 - 1), 0, f"e{sub_half_exp - 100}"),
    # Exponents past strconv's clamp.
    ("1, 20000 zeros, e-20000", "1", 20000, "e-20000"),
    ("0., 20000 zeros, 1e20001", "0.", 20000, "1e20001"),
    ("1, 99688 zeros, e-150000", "1", 99688, "e-150000"),
    ("1, 100000 zeros, e-100308", "1", 100000, "e-100308"),
    ("1, 400000 zeros, 7e-400001", "1", 400000, "7e-400001"),
    ("1e-1000000000", "1e-1000000000", 0, ""),
    ("1e+1000000000", "1e+1000000000", 0, ""),
    ("0.0e99999999999", "0.0e99999999999", 0, ""),
    ("-0., 5000 zeros, e-5", "-0.", 5000, "e-5"),
    ("2.5e-324, 900 zero digits", "2.", 900, "5e-324"),
]

out = []
for name, prefix, zeros, suffix in cases:
    x = float(prefix + "0" * zeros + suffix)
    out.append({"name": name, "prefix": prefix, "zeros": zeros, "suffix": suffix,
                "python": "inf" if x == float("inf") else x.hex()})
print(json.dumps(out, indent=1))
